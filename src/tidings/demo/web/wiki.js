/* The demo wiki's page: the bell for the signed-in user (the inbox keeps the token for this tab),
 * a "Watch" button that subscribes them to the page through the HTTP API and, on a user's page,
 * a "Follow" button: that user's edits then reach the inbox's Following page. */
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

  const me = (() => {
    try { return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub; }
    catch (error) { return ""; }
  })();

  // Whether the signed-in user follows `user` (follows are paged).
  async function follows(user) {
    let cursor = null;
    do {
      const page = await api(`/v1/me/follows?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      if (page.items.some((item) => item.user === user)) return true;
      cursor = page.next_cursor;
    } while (cursor);
    return false;
  }

  function setUpFollow() {
    const follow = document.getElementById("follow");
    if (!follow || follow.dataset.user === me) return;
    const user = follow.dataset.user;
    let following = false;
    const show = () => {
      follow.setAttribute("aria-pressed", String(following));
      follow.textContent = following ? "✓ Following" : "+ Follow";
    };
    follows(user).then((found) => {
      following = found;
      show();
      follow.hidden = false;
    }).catch(() => { /* the Watch button says what went wrong */ });
    follow.addEventListener("click", async () => {
      follow.disabled = true;
      try {
        const path = `/v1/me/follows/${encodeURIComponent(user)}`;
        following = (await api(path, { method: following ? "DELETE" : "PUT" })).following;
        status.textContent = following ? `You follow ${user}: their edits show on your Following page.`
          : `You no longer follow ${user}.`;
        show();
      } catch (error) {
        status.textContent = `That did not work (${error.message}).`;
      } finally {
        follow.disabled = false;
      }
    });
  }

  if (!token) {
    document.getElementById("sign-in").hidden = false;
    return;
  }
  bell.setAttribute("token", token);
  bell.hidden = false;
  setUpFollow();
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
