/* Mutes as the person sees them. An object is shown by its title, made from its key as the
 * server makes `object_title` ("page:San_Francisco" → "San Francisco"); a notification mutes
 * the object key it carries; a typed title is resolved against the objects of the person's
 * own notifications, never taken as a key it might not be. */
import { api } from "./session.js";

export function objectTitle(key) {
  const colon = key.indexOf(":");
  return (colon < 0 ? key : key.slice(colon + 1)).replaceAll("_", " ");
}

// Add one object to the person's mutes; the rest of their preferences is sent back as it is.
export async function muteObject(key) {
  const prefs = await api("/v1/me/preferences");
  if (prefs.muted.objects.includes(key)) return prefs;
  prefs.muted.objects.push(key);
  return api("/v1/me/preferences", { method: "PUT", body: JSON.stringify(prefs) });
}

// The objects of the person's newest notifications (up to `pages` pages of 100): key → title.
export async function knownObjects(pages = 3) {
  const found = new Map();
  let cursor = null;
  for (let page = 0; page < pages; page += 1) {
    const params = new URLSearchParams({ limit: "100" });
    if (cursor) params.set("cursor", cursor);
    const answer = await api(`/v1/me/notifications?${params}`);
    for (const item of answer.items) if (item.object) found.set(item.object, objectTitle(item.object));
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  return found;
}

const folded = (text) => text.trim().replace(/[\s_]+/g, " ").toLowerCase();

// The key of the known object whose title (or key) is `text`, ignoring case; null if none.
export function resolveObject(text, known) {
  const wanted = folded(text);
  for (const [key, title] of known) {
    if (folded(title) === wanted || key.toLowerCase() === text.trim().toLowerCase()) return key;
  }
  return null;
}
