/* The "Following" page: GET /v1/me/timeline, what the people you follow did, by day. */
import { api, labelOf, loadTypes } from "./session.js";
import { dayGroups, el, emptyState, infinite, kit, nearViewport, skeleton } from "./dom.js";

// "page:San_Francisco" → "San Francisco"; other keys as they are.
const objectTitle = (key) => (key || "").replace(/^[a-z]+:/, "").replace(/_/g, " ");

export async function showFollowing(main) {
  const list = main.querySelector("#list");
  const status = main.querySelector("#list-status");
  let catalog = { items: [] };
  let cursor = null;
  let done = false;
  let loading = false;
  const append = dayGroups(list);
  list.replaceChildren(...skeleton());
  try { catalog = await loadTypes(); } catch (error) { /* names instead of labels */ }

  function render(event) {
    const what = el("div", { class: "title" }, el("strong", { text: event.actor || "someone" }),
                    ` · ${labelOf(catalog, event.type)}`);
    if (event.object) what.append(" · ", el("span", { class: "object", text: objectTitle(event.object) }));
    return el("li", { class: "row read" }, kit.avatar(event.actor || "", event.type, "", event.payload?.avatar_url),
              el("div", { class: "body" }, what,
                 el("div", { class: "meta", text: kit.relativeTime(event.created_at) })));
  }

  async function more() {
    if (loading || done) return;
    loading = true;
    const params = new URLSearchParams({ limit: "20" });
    if (cursor) params.set("cursor", cursor);
    try {
      const page = await api(`/v1/me/timeline?${params}`);
      if (!cursor) list.replaceChildren();
      append(page.items, render);
      cursor = page.next_cursor;
      done = !cursor;
      const any = list.querySelector("li");
      if (!any) list.append(emptyState("Nothing yet", "Follow people to see what they do here."));
      status.textContent = done && any ? "That is everything." : "";
    } catch (error) {
      status.textContent = `Could not load the timeline: ${error.message}`;
    } finally {
      loading = false;
    }
    if (!done && nearViewport(main.querySelector("#sentinel"))) more();
  }

  infinite(main.querySelector("#sentinel"), more);
  more();
}
