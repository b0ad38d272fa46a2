/* The web inbox: sign-in, notifications page with infinite scroll, preferences. No build step;
 * every value from the server is placed with textContent, never as markup. */
(() => {
  "use strict";
  const main = document.getElementById("main");
  const bell = document.getElementById("bell");
  const who = document.getElementById("who");
  const signOut = document.getElementById("sign-out");
  const KEY = "tidings.token";

  function takeTokenFromFragment() {
    const match = window.location.hash.match(/(?:^#|&)token=([^&]+)/);
    if (match) {
      sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", window.location.pathname + "#/notifications");
    }
  }

  const token = () => sessionStorage.getItem(KEY) || "";

  function userOf(jwt) {
    try { return JSON.parse(atob(jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub; }
    catch (error) { return ""; }
  }

  async function api(path, options = {}) {
    const response = await fetch(path, { ...options, headers: {
      "Authorization": `Bearer ${token()}`, "Content-Type": "application/json" } });
    if (response.status === 401) { signOutNow(); throw new Error("signed out"); }
    const data = response.status === 204 ? null : await response.json();
    if (!response.ok) throw new Error(data && data.error ? data.error.message : response.status);
    return data;
  }

  function signOutNow() {
    sessionStorage.removeItem(KEY);
    bell.removeAttribute("token");
    route();
  }

  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    node.append(...children);
    return node;
  }

  // A link is followed only when it is an http(s) URL or a path on this site. "//evil.example",
  // "/\evil.example" (read as "//"), "javascript:", and links holding whitespace or control
  // characters (which browsers strip or reinterpret) are shown as plain text. The server checks
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

  function relativeTime(iso) {
    const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (seconds < 60) return "just now";
    for (const [name, size] of [["day", 86400], ["hour", 3600], ["minute", 60]]) {
      if (seconds >= size) { const n = Math.floor(seconds / size); return `${n} ${name}${n === 1 ? "" : "s"} ago`; }
    }
    return "just now";
  }

  function mount(id) {
    main.replaceChildren(document.getElementById(id).content.cloneNode(true));
    for (const link of document.querySelectorAll("nav a")) {
      link.toggleAttribute("aria-current", link.getAttribute("href") === window.location.hash);
      if (link.hasAttribute("aria-current")) link.setAttribute("aria-current", "page");
    }
  }

  // -- sign in --------------------------------------------------------------------------------
  async function showSignIn() {
    mount("sign-in");
    who.textContent = "";
    signOut.hidden = true;
    document.getElementById("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(KEY, document.getElementById("token").value.trim());
      window.location.hash = "#/notifications";
      route();
    });
    try {
      const response = await fetch("/demo/users");
      if (!response.ok) return;
      const users = await response.json();
      const box = document.getElementById("demo-users");
      box.hidden = false;
      box.querySelector(".users").replaceChildren(...users.items.map((user) =>
        el("li", {}, el("a", { href: `#token=${encodeURIComponent(user.token)}`,
                               class: "user", text: `Sign in as ${user.user}` }))));
      for (const link of box.querySelectorAll("a")) {
        link.addEventListener("click", () => setTimeout(() => { takeTokenFromFragment(); route(); }));
      }
    } catch (error) { /* not a demo */ }
  }

  // -- notifications ----------------------------------------------------------------------------
  async function showNotifications() {
    mount("notifications");
    const list = document.getElementById("list");
    const status = document.getElementById("list-status");
    const typeFilter = document.getElementById("type-filter");
    const unreadOnly = document.getElementById("unread-only");
    let section = "";
    let cursor = null;
    let done = false;
    let loading = false;
    let generation = 0;

    api("/v1/types").then((types) => {
      for (const type of types.items) typeFilter.append(el("option", { value: type.name, text: type.name }));
    }).catch(() => {});

    function render(item) {
      const li = el("li", { class: item.read ? "read" : "unread", "data-id": item.id });
      const title = el("div", { class: "title" });
      const link = safeLink(item.link);
      if (link) title.append(el("a", { href: link, text: item.title }));
      else title.textContent = item.title;
      const meta = el("div", { class: "meta", text:
        `${item.actors.join(", ")} · ${relativeTime(item.created_at)} · ${item.section}` +
        (item.count > 1 ? ` · ${item.count} notifications` : "") });
      const toggle = el("button", { class: "toggle", text: item.read ? "Mark unread" : "Mark read" });
      toggle.addEventListener("click", async () => {
        await api(`/v1/me/notifications/${item.read ? "unread" : "read"}`,
          { method: "POST", body: JSON.stringify({ ids: [item.id] }) });
        item.read = !item.read;
        li.replaceWith(render(item));
      });
      li.append(el("span", { class: "dot", "aria-hidden": "true" }),
                el("div", { class: "body" }, title, meta), toggle);
      return li;
    }

    async function more() {
      if (loading || done) return;
      loading = true;
      const mine = generation;
      const params = new URLSearchParams({ limit: "20" });
      if (section) params.set("section", section);
      if (typeFilter.value) params.set("types", typeFilter.value);
      if (unreadOnly.checked) params.set("unread", "true");
      if (cursor) params.set("cursor", cursor);
      try {
        const page = await api(`/v1/me/notifications?${params}`);
        if (mine !== generation) return;
        list.append(...page.items.map(render));
        cursor = page.next_cursor;
        done = !cursor;
        status.textContent = done ? (list.children.length ? "That is everything." : "No notifications.") : "";
      } catch (error) {
        status.textContent = `Could not load notifications: ${error.message}`;
      } finally {
        loading = false;
      }
      if (!done && isVisible(document.getElementById("sentinel"))) more();
    }

    function reset() {
      generation += 1;
      cursor = null; done = false; loading = false;
      list.replaceChildren();
      more();
    }

    for (const tab of main.querySelectorAll("[role=tab]")) {
      tab.addEventListener("click", () => {
        section = tab.dataset.section;
        for (const other of main.querySelectorAll("[role=tab]")) other.setAttribute("aria-selected", String(other === tab));
        reset();
      });
    }
    typeFilter.addEventListener("change", reset);
    unreadOnly.addEventListener("change", reset);
    document.getElementById("mark-all").addEventListener("click", async () => {
      const body = { all: true };
      if (section) body.section = section;
      await api("/v1/me/notifications/read", { method: "POST", body: JSON.stringify(body) });
      reset();
    });
    // new arrivals (the bell hears them over SSE) show up at the top while you are there
    let lastCount = null;
    const onCount = (event) => {
      if (!document.body.contains(list)) { bell.removeEventListener("tidings-count", onCount); return; }
      const count = event.detail.count;
      if (lastCount !== null && count > lastCount && window.scrollY < 200) reset();
      lastCount = count;
    };
    bell.addEventListener("tidings-count", onCount);
    new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) more();
    }).observe(document.getElementById("sentinel"));
    more();
  }

  function isVisible(node) {
    const rect = node.getBoundingClientRect();
    return rect.top < window.innerHeight + 200;
  }

  // -- preferences ----------------------------------------------------------------------------
  async function showPreferences() {
    // load first, then show the form: nothing typed can be overwritten by a late answer
    const [prefs, types] = await Promise.all([api("/v1/me/preferences"), api("/v1/types")]);
    mount("preferences");
    const form = document.getElementById("prefs");
    const status = document.getElementById("prefs-status");
    const $ = (id) => document.getElementById(id);
    $("email").value = prefs.email.address || "";
    $("frequency").value = prefs.email.frequency;
    $("timezone").value = prefs.email.timezone;
    $("digest-hour").value = prefs.email.digest_hour;
    $("locale").value = prefs.locale || "";
    $("muted-actors").value = prefs.muted.actors.join("\n");
    $("muted-objects").value = prefs.muted.objects.join("\n");
    const showUnsubscribed = () => {
      $("unsubscribed").textContent = $("frequency").value === "never" ? "You receive no email." : "";
    };
    $("frequency").addEventListener("change", showUnsubscribed);
    showUnsubscribed();
    const categories = [...new Set(types.items.map((type) => type.category))].sort();
    $("matrix").replaceChildren(...categories.map((category) => {
      const row = el("tr", {}, el("th", { scope: "row", text: category }));
      for (const channel of ["web", "email", "webhook"]) {
        const current = (prefs.channels[category] || {})[channel];
        const box = el("input", { type: "checkbox", "data-category": category, "data-channel": channel,
                                  "aria-label": `${category} by ${channel}` });
        box.checked = current === undefined ? channel !== "webhook" : current;
        row.append(el("td", {}, box));
      }
      return row;
    }));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const channels = {};
      for (const box of form.querySelectorAll("input[data-category]")) {
        (channels[box.dataset.category] ||= {})[box.dataset.channel] = box.checked;
      }
      const lines = (id) => $(id).value.split("\n").map((v) => v.trim()).filter(Boolean);
      const body = {
        email: { address: $("email").value.trim() || null, frequency: $("frequency").value,
                 timezone: $("timezone").value.trim() || "UTC",
                 digest_hour: Number($("digest-hour").value || 8) },
        channels, muted: { actors: lines("muted-actors"), objects: lines("muted-objects") },
        locale: $("locale").value || null,
      };
      try {
        await api("/v1/me/preferences", { method: "PUT", body: JSON.stringify(body) });
        status.textContent = "Saved.";
      } catch (error) {
        status.textContent = `Not saved: ${error.message}`;
      }
    });
  }

  // -- routing ----------------------------------------------------------------------------------
  function route() {
    takeTokenFromFragment();
    if (!token()) { showSignIn(); return; }
    const user = userOf(token());
    who.textContent = user ? `Signed in as ${user}` : "";
    signOut.hidden = false;
    if (bell.getAttribute("token") !== token()) bell.setAttribute("token", token());
    if (window.location.hash.startsWith("#/preferences")) showPreferences();
    else showNotifications();
  }

  signOut.addEventListener("click", signOutNow);
  window.addEventListener("hashchange", route);
  route();
})();
