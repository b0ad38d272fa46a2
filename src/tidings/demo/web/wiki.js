/* The demo wiki's page: the bell for the signed-in user (the inbox keeps the token for this tab)
 * and a "Watch" button that subscribes them to the page through the HTTP API. */
(() => {
  "use strict";
  const token = sessionStorage.getItem("tidings.token") || "";
  const bell = document.getElementById("bell");
  const button = document.getElementById("watch");
  const status = document.getElementById("watch-status");
  const { object, title } = button.dataset;
  let subscription = null;

  async function api(path, options = {}) {
    const response = await fetch(path, { ...options, headers: {
      "Authorization": `Bearer ${token}`, "Content-Type": "application/json" } });
    if (!response.ok) throw new Error(`${response.status}`);
    return response.status === 204 ? null : response.json();
  }

  // The user's subscription to everything on this page, if any (subscriptions are paged).
  async function find() {
    let cursor = null;
    do {
      const page = await api(`/v1/me/subscriptions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      const found = page.items.find((item) => item.object === object && item.type === "*");
      if (found) return found;
      cursor = page.next_cursor;
    } while (cursor);
    return null;
  }

  function show() {
    const watching = subscription !== null;
    button.setAttribute("aria-pressed", String(watching));
    button.textContent = watching ? "★ Watching" : "☆ Watch";
  }

  if (!token) {
    document.getElementById("sign-in").hidden = false;
    return;
  }
  bell.setAttribute("token", token);
  bell.hidden = false;
  find().then((found) => {
    subscription = found;
    show();
    button.hidden = false;
  }).catch(() => { status.textContent = "Sign in again from the inbox to watch pages."; });
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      if (subscription) {
        await api(`/v1/me/subscriptions/${encodeURIComponent(subscription.id)}`, { method: "DELETE" });
        subscription = null;
        status.textContent = `You no longer watch ${title}.`;
      } else {
        const created = await api("/v1/me/subscriptions", { method: "POST",
          body: JSON.stringify({ type: "*", object, channels: ["web"] }) });
        subscription = { id: created.id, type: "*", object };
        status.textContent = `You watch ${title}: its edits and links reach your inbox.`;
      }
      show();
    } catch (error) {
      status.textContent = `That did not work (${error.message}).`;
    } finally {
      button.disabled = false;
    }
  });
})();
