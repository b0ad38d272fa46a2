/* Drawing helpers of <tidings-bell>, shared with the web inbox through TidingsBell.kit:
 * safe links, token expiry, times and days, type icons, avatars. Part of /tidings-bell.js (see api/web.py). */
const LABELS = {
  title: "Notifications", alerts: "Alerts", messages: "Messages", "mark-all": "Mark all as read",
  "see-all": "See all notifications", empty: "You're all caught up",
  "empty-hint": "New notifications will show up here.", error: "Notifications could not be loaded.",
  today: "Today", yesterday: "Yesterday", earlier: "Earlier", "mark-read": "Mark as read",
  "mark-unread": "Mark as unread", "new-one": "New notification", unseen: "new", unread: "unread",
};

const SVG = (body, extra = "") => `<svg viewBox="0 0 24 24" aria-hidden="true" fill="none" ` +
  `stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"${extra}>${body}</svg>`;
const ICONS = {
  bell: '<path d="M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9"/><path d="M13.7 21a2 2 0 0 1-3.4 0"/>',
  mention: '<circle cx="12" cy="12" r="4"/><path d="M16 8v5a3 3 0 0 0 6 0v-1a10 10 0 1 0-4 8"/>',
  message: '<path d="M21 15a2 2 0 0 1-2 2H7l-4 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"/>',
  link: '<path d="M10 13a5 5 0 0 0 7.5.5l3-3a5 5 0 0 0-7-7l-1.7 1.7"/><path d="M14 11a5 5 0 0 0-7.5-.5l-3 3a5 5 0 0 0 7 7l1.7-1.7"/>',
  revert: '<path d="M3 7v6h6"/><path d="M21 17a9 9 0 0 0-15-6.7L3 13"/>',
  thanks: '<path d="M20.8 4.6a5.5 5.5 0 0 0-7.8 0L12 5.7l-1-1.1a5.5 5.5 0 0 0-7.8 7.8l1 1L12 21l7.8-7.6 1-1a5.5 5.5 0 0 0 0-7.8z"/>',
  edit: '<path d="M12 20h9"/><path d="M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4z"/>',
  follow: '<path d="M16 21v-2a4 4 0 0 0-4-4H5a4 4 0 0 0-4 4v2"/><circle cx="8.5" cy="7" r="4"/><path d="M20 8v6M23 11h-6"/>',
  inbox: '<path d="M22 12h-6l-2 3h-4l-2-3H2"/><path d="M5.5 5.1 2 12v6a2 2 0 0 0 2 2h16a2 2 0 0 0 2-2v-6l-3.5-6.9A2 2 0 0 0 16.8 4H7.2a2 2 0 0 0-1.7 1.1z"/>',
};
// A type's icon, by the first keyword found in its name or category (docs/web.md).
const KEYWORDS = [["thank", "thanks"], ["like", "thanks"], ["mention", "mention"],
  ["talk", "message"], ["message", "message"], ["reply", "message"], ["comment", "message"],
  ["revert", "revert"], ["undo", "revert"], ["link", "link"], ["follow", "follow"],
  ["edit", "edit"], ["change", "edit"]];
const PALETTE = ["#1d6fb8", "#7a3db8", "#b83d6e", "#b8583d", "#2f8a4c", "#0f7c80", "#5a5fc8", "#a0651c"];

function icon(name) {
  const span = document.createElement("span");
  span.innerHTML = SVG(ICONS[name] || ICONS.bell);  // a constant: never data
  return span.firstChild;
}

function iconName(type, category) {
  const words = `${type || ""} ${category || ""}`.toLowerCase();
  const found = KEYWORDS.find(([word]) => words.includes(word));
  return found ? found[1] : "bell";
}

// A link is followed only when it is an http(s) URL or a path on this site. "//evil.example",
// "/\evil.example" (read as "//"), "javascript:", and links holding whitespace or control
// characters (which browsers strip or reinterpret) are not followed. The server checks
// links the same way; this guards against anything older or elsewhere.
function safeLink(link) {
  if (typeof link !== "string" || !link || /[\\\p{Cc}\p{Cf}\p{Cs}\p{Z}]/u.test(link)) return null;
  if (link.startsWith("/")) return link.startsWith("//") ? null : link;
  if (!/^https?:\/\//i.test(link)) return null;
  try {
    const url = new URL(link);
    return url.username || url.password || !url.hostname ? null : link;
  } catch (error) { return null; }
}

// When a user token (a JWT) expires: its exp claim, in seconds since the epoch; null for
// anything else. Read, never verified: only the server can tell a good token.
function expiryOf(token) {
  try {
    const claims = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return Number.isFinite(claims.exp) ? claims.exp : null;
  } catch (error) { return null; }
}

function relativeTime(iso, now = Date.now()) {
  const seconds = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (seconds < 60) return "just now";
  if (seconds >= 7 * 86400) {
    const date = new Date(iso);
    const year = date.getFullYear() === new Date(now).getFullYear() ? undefined : "numeric";
    return date.toLocaleDateString(undefined, { day: "numeric", month: "short", year });
  }
  for (const [name, size] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (seconds >= size) { const n = Math.floor(seconds / size); return `${n} ${name}${n === 1 ? "" : "s"} ago`; }
  }
  return "just now";
}

// "today", "yesterday" or "earlier", by the reader's own calendar.
function dayOf(iso, now = new Date()) {
  const start = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  const at = Date.parse(iso);
  if (at >= start) return "today";
  return at >= start - 86400000 ? "yesterday" : "earlier";
}

// Split items (newest first) into [day, items] runs.
function byDay(items) {
  const runs = [];
  for (const item of items) {
    const day = dayOf(item.created_at);
    if (!runs.length || runs[runs.length - 1][0] !== day) runs.push([day, []]);
    runs[runs.length - 1][1].push(item);
  }
  return runs;
}

// The actor's picture (payload.avatar_url, a safe link) or initials on a colour of their own,
// with the type's icon on its corner; an item without actor shows the icon alone.
function avatar(actor, type, category, url) {
  const box = document.createElement("span");
  box.className = "avatar";
  box.setAttribute("aria-hidden", "true");
  const kind = iconName(type, category);
  const initials = () => {
    const face = document.createElement("span");
    face.className = "face";
    let hash = 0;
    for (const ch of actor) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
    face.style.background = PALETTE[hash % PALETTE.length];
    face.textContent = [...actor][0].toUpperCase();
    return face;
  };
  if (!actor) {
    const face = document.createElement("span");
    face.className = "face";
    face.style.background = "var(--accent)";
    face.append(icon(kind));
    box.append(face);
    return box;
  }
  const link = safeLink(url);
  if (link) {
    const img = document.createElement("img");
    img.className = "face";
    img.alt = "";
    img.src = link;
    img.addEventListener("error", () => img.replaceWith(initials()), { once: true });
    box.append(img);
  } else box.append(initials());
  const badge = document.createElement("span");
  badge.className = "kind";
  badge.append(icon(kind));
  box.append(badge);
  return box;
}
