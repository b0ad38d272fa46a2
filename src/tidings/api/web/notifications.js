/* The notifications page: section tabs with unread counts, tabs of the saved, archived and
 * snoozed items, a type filter, unread only, participating (sent to you or mentioning you), why
 * each row arrived, days ("Today", "Yesterday", "Earlier"), infinite scroll, a read / unread
 * control per row, archive / save / snooze per row (keys e, s, z on the focused row), on a
 * bundle a control that opens its members in place, and on a row about an object (a page) a
 * control that mutes that object. */
import { api, labelOf, loadTypes } from "./session.js";
import { announce, dayGroups, el, emptyState, infinite, kit, nearViewport, skeleton, tabs } from "./dom.js";
import { muteObject, objectTitle } from "./mutes.js";

const EMPTY = {
  saved: "Save a notification (s) to keep it here.",
  archived: "Archived notifications (e) show up here.",
  snoozed: "Snoozed notifications (z) wait here until their time.",
};

// Why a notification arrived (an item's `reason`), as a row says it, and its longer form.
const REASONS = {
  recipient: ["to you", "Sent to you"],
  mention: ["mentioned", "You are mentioned"],
  subscribed: ["subscribed", "You subscribed to this"],
  following: ["following", "You follow who did this"],
  group: ["group", "Sent to a group you are in"],
};

export async function showNotifications(main, bell) {
  const list = main.querySelector("#list");
  const status = main.querySelector("#list-status");
  const typeFilter = main.querySelector("#type-filter");
  const unreadOnly = main.querySelector("#unread-only");
  const participating = main.querySelector("#participating");
  let catalog = { items: [] };
  let section = "";
  let state = "";  // "" (the inbox), "saved", "archived" or "snoozed"
  let cursor = null;
  let done = false;
  let loading = false;
  let generation = 0;
  let append = dayGroups(list);

  list.replaceChildren(...skeleton());
  list.setAttribute("aria-busy", "true");
  status.textContent = "Loading…";
  try {  // labels first: rows name their type by its label
    catalog = await loadTypes();
    for (const type of catalog.items) typeFilter.append(el("option", { value: type.name, text: type.label || type.name }));
  } catch (error) { /* names instead of labels */ }

  async function counts() {
    await Promise.all([...main.querySelectorAll("[role=tab][data-section]")].map(async (tab) => {
      const badge = tab.querySelector(".count");
      const query = tab.dataset.section ? `?section=${tab.dataset.section}` : "";
      try {
        const answer = await api(`/v1/me/notifications/unread-count${query}`);
        badge.textContent = answer.display;
        badge.hidden = answer.count === 0;
      } catch (error) { badge.hidden = true; }
      const name = tab.firstChild.textContent.trim();
      if (badge.hidden) tab.removeAttribute("aria-label");
      else tab.setAttribute("aria-label", `${name}, ${badge.textContent} unread`);
    }));
  }

  function render(item) {
    const li = el("li", { class: `row ${item.read ? "read" : "unread"}`, "data-id": item.id });
    const title = el("div", { class: "title" });
    const link = kit.safeLink(item.link);
    if (link) {
      const anchor = el("a", { href: link, text: item.title });
      anchor.addEventListener("click", () => {
        if (!item.read) api("/v1/me/notifications/read", { method: "POST", keepalive: true,
                                                          body: JSON.stringify({ ids: [item.id] }) }).catch(() => {});
      });
      title.append(anchor);
    } else title.textContent = item.title;
    const parts = [labelOf(catalog, item.type), kit.relativeTime(item.created_at)];
    if (item.snoozed_until) parts.push(`snoozed until ${new Date(item.snoozed_until).toLocaleString()}`);
    if (item.saved) parts.push("saved");
    if (item.archived) parts.push("archived");
    const body = el("div", { class: "body" }, title);
    if (!item.read) body.append(el("span", { class: "sr", text: " (unread)" }));
    if (item.body) body.append(el("div", { class: "text", text: item.body }));
    const meta = el("div", { class: "meta", text: parts.join(" · ") });
    const why = REASONS[item.reason];
    if (why) meta.append(" · ", el("span", { class: "reason", title: why[1], text: why[0] }));
    const bundle = item.count > 1 ? membersControl(item) : null;
    if (bundle) meta.append(" · ", bundle.button);
    if (item.object) meta.append(" · ", muteControl(item.object));
    for (const action of triageActions(item)) meta.append(" · ", triageControl(item, li, action));
    body.append(meta);
    if (bundle) body.append(bundle.panel);
    const word = item.read ? "Mark as unread" : "Mark as read";
    const toggle = el("button", { class: "mark toggle", title: word, "aria-label": `${word}: ${item.title}` },
                      el("span", { class: "dot" }));
    toggle.addEventListener("click", async () => {
      await api(`/v1/me/notifications/${item.read ? "unread" : "read"}`,
        { method: "POST", body: JSON.stringify({ ids: [item.id] }) });
      item.read = !item.read;
      const fresh = render(item);
      li.replaceWith(fresh);
      fresh.querySelector(".mark").focus();
      counts();
    });
    li.append(kit.avatar(item.actor || "", item.type, item.category, item.payload?.avatar_url), body, toggle);
    return li;
  }

  // Archive, save, snooze (and undo each) an item's group; the row leaves a list it no longer
  // belongs in. Keys: e archive, s save, z snooze, on the focused row.
  function triageActions(item) {
    return [
      item.archived ? { key: "e", route: "unarchive", label: "Unarchive", done: "moved back to the inbox", leaves: state === "archived" }
                    : { key: "e", route: "archive", label: "Archive", done: "archived", leaves: state === "" || state === "snoozed" },
      item.saved ? { key: "s", route: "unsave", label: "Unsave", done: "no longer saved", leaves: state === "saved" }
                 : { key: "s", route: "save", label: "Save", done: "saved", leaves: false },
      item.snoozed_until ? { key: "z", route: "unsnooze", label: "Unsnooze", done: "moved back to the inbox", leaves: state === "snoozed" }
                         : { key: "z", route: "snooze", label: "Snooze", done: "snoozed until tomorrow", leaves: state === "" },
    ];
  }

  function tomorrowMorning() {
    const at = new Date();
    at.setDate(at.getDate() + 1);
    at.setHours(8, 0, 0, 0);
    return at.toISOString();
  }

  async function triage(item, li, action) {
    const body = { ids: [item.id] };
    if (action.route === "snooze") body.until = tomorrowMorning();
    try {
      await api(`/v1/me/notifications/${action.route}`, { method: "POST", body: JSON.stringify(body) });
    } catch (error) {
      status.textContent = `Could not ${action.label.toLowerCase()}: ${error.message}`;
      return;
    }
    const message = `${item.title}: ${action.done}.`;
    status.textContent = message;
    announce(message);
    if (action.route === "archive") item.archived = true;
    if (action.route === "unarchive") item.archived = false;
    if (action.route === "save") item.saved = true;
    if (action.route === "unsave") item.saved = false;
    if (action.route === "snooze") item.snoozed_until = body.until;
    if (action.route === "unsnooze") item.snoozed_until = null;
    if (action.leaves) {
      const next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      next?.querySelector(".mark")?.focus();
    } else {
      const fresh = render(item);
      li.replaceWith(fresh);
      fresh.querySelector(`button.triage[data-key="${action.key}"]`)?.focus();
    }
    counts();
  }

  function triageControl(item, li, action) {
    const button = el("button", { class: "link triage", text: action.label, "data-key": action.key,
                                  title: `${action.label} (${action.key})`, "aria-label": `${action.label}: ${item.title}`,
                                  "aria-keyshortcuts": action.key });
    button.addEventListener("click", () => triage(item, li, action));
    li.triage = li.triage || {};
    li.triage[action.key] = () => triage(item, li, action);
    return button;
  }

  list.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.target.closest(".members")) return;
    const row = event.target.closest("li.row");
    const act = row?.triage?.[event.key];
    if (!act) return;
    event.preventDefault();
    act();
  });

  // A bundle opens in place: its members (who, when, each one's own title), a page at a time.
  function membersControl(item) {
    const panel = el("ul", { class: "members", id: `members-${item.id}`, hidden: "" });
    const button = el("button", { class: "link open", text: `${item.count} notifications`,
                                  "aria-expanded": "false", "aria-controls": panel.id,
                                  title: `Show the ${item.count} notifications of this bundle` });
    let cursor = null;
    let loaded = false;
    async function load() {
      const params = new URLSearchParams({ limit: "10" });
      if (cursor) params.set("cursor", cursor);
      const page = await api(`/v1/me/notifications/${encodeURIComponent(item.id)}/members?${params}`);
      panel.querySelector("li.more")?.remove();
      for (const member of page.items) {
        const line = el("li", { class: member.read ? "member read" : "member unread" },
                        el("span", { class: "member-title", text: member.title }));
        if (!member.read) line.append(el("span", { class: "sr", text: " (unread)" }));
        const why = REASONS[member.reason];
        line.append(el("span", { class: "meta", text: ` · ${kit.relativeTime(member.created_at)}${why ? ` · ${why[0]}` : ""}` }));
        panel.append(line);
      }
      cursor = page.next_cursor;
      if (cursor) {
        const next = el("button", { class: "link", text: "Show more" });
        next.addEventListener("click", () => load().catch((error) => {
          status.textContent = `Could not load the bundle: ${error.message}`;
        }));
        panel.append(el("li", { class: "more" }, next));
      }
    }
    button.addEventListener("click", async () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      panel.hidden = !open;
      if (open && !loaded) {
        loaded = true;
        try { await load(); } catch (error) {
          loaded = false;
          status.textContent = `Could not load the bundle: ${error.message}`;
        }
      }
    });
    return { button, panel };
  }

  // Mutes the object the item carries (its key), named by the title the person sees.
  function muteControl(object) {
    const name = objectTitle(object);
    const button = el("button", { class: "link mute", text: "Mute", title: `Mute ${name}`,
                                  "aria-label": `Mute ${name}` });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await muteObject(object);
        for (const same of list.querySelectorAll("button.mute")) {
          if (same.getAttribute("aria-label") === button.getAttribute("aria-label")) {
            same.textContent = "Muted"; same.disabled = true;
          }
        }
        status.textContent = `${name} is muted.`;
        announce(`${name} is muted.`);
      } catch (error) {
        button.disabled = false;
        status.textContent = `Could not mute ${name}: ${error.message}`;
      }
    });
    return button;
  }

  async function more() {
    if (loading || done) return;
    loading = true;
    const mine = generation;
    const params = new URLSearchParams({ limit: "20" });
    if (section) params.set("section", section);
    if (state) params.set("state", state);
    if (typeFilter.value) params.set("types", typeFilter.value);
    if (unreadOnly.checked) params.set("unread", "true");
    if (participating.checked) params.set("participating", "true");
    if (cursor) params.set("cursor", cursor);
    if (!cursor) status.textContent = "Loading…";
    try {
      const page = await api(`/v1/me/notifications?${params}`);
      if (mine !== generation) return;
      if (!cursor) list.replaceChildren();
      append(page.items, render);
      cursor = page.next_cursor;
      done = !cursor;
      const any = list.querySelector("li");
      if (!any && state) list.append(emptyState(`Nothing ${state}`, EMPTY[state]));
      else if (!any) list.append(emptyState(unreadOnly.checked ? "Nothing unread"
                                       : participating.checked ? "Nothing sent to you or mentioning you"
                                       : "You're all caught up",
                                       "New notifications will show up here."));
      status.textContent = done && any ? "That is everything." : "";
    } catch (error) {
      if (mine === generation) status.textContent = `Could not load notifications: ${error.message}`;
    } finally {
      if (mine === generation) { loading = false; list.removeAttribute("aria-busy"); }
    }
    if (mine === generation && !done && nearViewport(main.querySelector("#sentinel"))) more();
  }

  function reset() {
    generation += 1;
    cursor = null; done = false; loading = false;
    list.replaceChildren(...skeleton());
    list.setAttribute("aria-busy", "true");
    append = dayGroups(list);
    more();
  }

  tabs(main.querySelector(".tabs"), (tab) => {
    section = tab.dataset.section || "";
    state = tab.dataset.state || "";
    reset();
  });
  typeFilter.addEventListener("change", reset);
  unreadOnly.addEventListener("change", reset);
  participating.addEventListener("change", reset);
  main.querySelector("#mark-all").addEventListener("click", async () => {
    await api("/v1/me/notifications/read", { method: "POST",
                                             body: JSON.stringify(section ? { all: true, section } : { all: true }) });
    announce(section ? "This section is marked read." : "Everything is marked read.");
    reset();
    counts();
  });
  // New arrivals (the bell hears them over SSE) show at the top while you are there.
  let lastCount = null;
  const onCount = (event) => {
    if (!document.body.contains(list)) { bell.removeEventListener("tidings-count", onCount); return; }
    const count = event.detail.count;
    if (lastCount !== null && count !== lastCount) {
      counts();
      if (count > lastCount && window.scrollY < 200) {
        announce(`${count - lastCount} new notification${count - lastCount === 1 ? "" : "s"}`);
        reset();
      }
    }
    lastCount = count;
  };
  bell.addEventListener("tidings-count", onCount);
  infinite(main.querySelector("#sentinel"), more);
  counts();
  reset();
}
