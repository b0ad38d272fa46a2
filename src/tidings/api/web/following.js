/* The "Following" page: GET /v1/me/timeline, what the people you follow did, by day.
 * "Older" pages back with the answer's cursor; posts that arrive meanwhile (the bell hears
 * them over SSE as `tidings-timeline`) are offered at the top, never slipped into the pages. */
import { api, labelOf, loadTypes } from "./session.js";
import { announce, dayGroups, el, emptyState, kit, skeleton } from "./dom.js";

// "page:San_Francisco" → "San Francisco"; other keys as they are.
const objectTitle = (key) => (key || "").replace(/^[a-z]+:/, "").replace(/_/g, " ");

export async function showFollowing(main, bell) {
  const list = main.querySelector("#list");
  const status = main.querySelector("#list-status");
  const older = main.querySelector("#older");
  const newer = main.querySelector("#newer");
  let catalog = { items: [] };
  let cursor = null;
  let loading = false;
  let append = dayGroups(list);
  const shown = new Set();
  const waiting = new Set();  // ids announced live, not shown yet
  list.replaceChildren(...skeleton());
  try { catalog = await loadTypes(); } catch (error) { /* names instead of labels */ }

  function render(event) {
    const what = el("div", { class: "title" }, el("strong", { text: event.actor || "someone" }),
                    ` · ${labelOf(catalog, event.type)}`);
    if (event.object) what.append(" · ", el("span", { class: "object", text: objectTitle(event.object) }));
    return el("li", { class: "row read", "data-id": event.id },
              kit.avatar(event.actor || "", event.type, "", event.payload?.avatar_url),
              el("div", { class: "body" }, what,
                 el("div", { class: "meta", text: kit.relativeTime(event.created_at) })));
  }

  // One page: the newest (first) or the one after `cursor` (older).
  async function load(first) {
    if (loading) return;
    loading = true;
    older.disabled = true;
    const params = new URLSearchParams({ limit: "20" });
    if (!first) params.set("cursor", cursor);
    try {
      const page = await api(`/v1/me/timeline?${params}`);
      if (first) {
        list.replaceChildren();
        append = dayGroups(list);
        shown.clear();
        waiting.clear();
        showWaiting();
      }
      const fresh = page.items.filter((item) => !shown.has(item.id));
      for (const item of fresh) shown.add(item.id);
      append(fresh, render);
      cursor = page.next_cursor;
      older.hidden = !cursor;
      const any = list.querySelector("li");
      if (!any) list.append(emptyState("Nothing yet", "Follow people to see what they do here."));
      status.textContent = !cursor && any ? "That is everything." : "";
    } catch (error) {
      status.textContent = `Could not load the timeline: ${error.message}`;
    } finally {
      loading = false;
      older.disabled = false;
    }
  }

  function showWaiting() {
    newer.hidden = waiting.size === 0;
    newer.textContent = waiting.size === 1 ? "1 new post" : `${waiting.size} new posts`;
  }

  const onTimeline = (event) => {
    if (!document.body.contains(list)) { bell.removeEventListener("tidings-timeline", onTimeline); return; }
    if (shown.has(event.detail.id) || waiting.has(event.detail.id)) return;
    waiting.add(event.detail.id);
    showWaiting();
    announce(`${newer.textContent} from people you follow`);
  };
  bell.addEventListener("tidings-timeline", onTimeline);
  older.addEventListener("click", () => load(false));
  newer.addEventListener("click", () => { window.scrollTo(0, 0); load(true); });
  await load(true);
}
