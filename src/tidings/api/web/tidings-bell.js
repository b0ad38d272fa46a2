/* <tidings-bell>: an unread badge and a flyout of the newest notifications, live over SSE.
 *
 *   <script src="https://tidings.example.org/tidings-bell.js"></script>
 *   <tidings-bell api="https://tidings.example.org" token="USER_TOKEN"></tidings-bell>
 *
 * Attributes: token (a user token), api (tidings' base URL; default: this page's origin),
 * href (where "All notifications" goes; default: {api}/#/notifications), locale.
 * Everything a notification carries is shown as text, never as markup.
 */
(() => {
  "use strict";

  const STYLE = `
    :host { position: relative; display: inline-block; font: inherit; color: inherit; }
    button { font: inherit; cursor: pointer; }
    .bell { position: relative; background: none; border: 0; padding: .4rem; color: inherit;
            border-radius: .4rem; line-height: 0; }
    .bell:focus-visible, .item:focus-visible, .action:focus-visible, .tab:focus-visible {
      outline: 2px solid #3b6ee0; outline-offset: 2px; }
    .bell svg { width: 1.5rem; height: 1.5rem; }
    .badge { position: absolute; top: -.1rem; right: -.3rem; min-width: 1.1rem; padding: 0 .3rem;
             border-radius: 1rem; background: #c62828; color: #fff; font-size: .7rem;
             line-height: 1.1rem; text-align: center; font-weight: 600; }
    .badge[hidden] { display: none; }
    .panel { position: absolute; right: 0; top: calc(100% + .4rem); z-index: 1000;
             width: min(24rem, calc(100vw - 1rem)); max-height: 70vh; overflow: auto;
             background: #fff; color: #1d1d1f; border: 1px solid #d0d4dc; border-radius: .6rem;
             box-shadow: 0 10px 30px rgba(0,0,0,.15); }
    .panel[hidden] { display: none; }
    .head { display: flex; align-items: center; justify-content: space-between; gap: .5rem;
            padding: .5rem .75rem; border-bottom: 1px solid #e5e7ec; }
    .tabs { display: flex; gap: .25rem; }
    .tab { background: none; border: 0; padding: .3rem .5rem; border-radius: .3rem; color: #555; }
    .tab[aria-selected="true"] { background: #eef2fb; color: #1d3f91; font-weight: 600; }
    .action { background: none; border: 0; color: #1d3f91; padding: .3rem; font-size: .85rem; }
    ul { list-style: none; margin: 0; padding: 0; }
    .item { display: flex; gap: .6rem; width: 100%; text-align: left; background: none; border: 0;
            border-bottom: 1px solid #f0f1f4; padding: .65rem .75rem; color: inherit; }
    .item:hover { background: #f6f8fc; }
    .dot { flex: none; width: .55rem; height: .55rem; margin-top: .4rem; border-radius: 50%; }
    .unread .dot { background: #3b6ee0; }
    .unread .title { font-weight: 600; }
    .title { display: block; overflow-wrap: anywhere; }
    .meta { display: block; color: #6b7080; font-size: .8rem; margin-top: .15rem; }
    .empty { padding: 1rem .75rem; color: #6b7080; }
    .foot { display: block; padding: .6rem .75rem; text-align: center; color: #1d3f91; }
  `;
  const BELL = '<svg viewBox="0 0 24 24" aria-hidden="true" fill="none" stroke="currentColor" ' +
    'stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M18 8a6 6 0 0 ' +
    '0-12 0c0 7-3 9-3 9h18s-3-2-3-9"/><path d="M13.73 21a2 2 0 0 1-3.46 0"/></svg>';

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

  function relativeTime(iso) {
    const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (seconds < 60) return "just now";
    const units = [["year", 31536000], ["day", 86400], ["hour", 3600], ["minute", 60]];
    for (const [name, size] of units) {
      if (seconds >= size) {
        const n = Math.floor(seconds / size);
        return `${n} ${name}${n === 1 ? "" : "s"} ago`;
      }
    }
    return "just now";
  }

  class TidingsBell extends HTMLElement {
    static get observedAttributes() { return ["token", "api", "locale"]; }

    constructor() {
      super();
      this.root = this.attachShadow({ mode: "open" });
      this.section = "alert";
      this.items = [];
      this.source = null;
      this.root.innerHTML = `<style>${STYLE}</style>
        <button class="bell" part="button" aria-haspopup="true" aria-expanded="false"
                aria-label="Notifications">${BELL}<span class="badge" hidden></span></button>
        <span class="sr" aria-live="polite" style="position:absolute;left:-9999px"></span>
        <div class="panel" role="dialog" aria-label="Notifications" hidden>
          <div class="head">
            <div class="tabs" role="tablist">
              <button class="tab" role="tab" data-section="alert" aria-selected="true">Alerts</button>
              <button class="tab" role="tab" data-section="message" aria-selected="false">Messages</button>
            </div>
            <button class="action mark-all">Mark all read</button>
          </div>
          <ul class="list"></ul>
          <a class="foot" part="all">All notifications</a>
        </div>`;
      this.button = this.root.querySelector(".bell");
      this.badge = this.root.querySelector(".badge");
      this.live = this.root.querySelector(".sr");
      this.panel = this.root.querySelector(".panel");
      this.list = this.root.querySelector(".list");
      this.button.addEventListener("click", () => this.toggle());
      this.root.querySelector(".mark-all").addEventListener("click", () => this.markAllRead());
      for (const tab of this.root.querySelectorAll(".tab")) {
        tab.addEventListener("click", () => this.showSection(tab.dataset.section));
      }
      this.addEventListener("keydown", (event) => {
        if (event.key === "Escape" && !this.panel.hidden) { this.toggle(false); this.button.focus(); }
      });
      this.onOutside = (event) => {
        if (!event.composedPath().includes(this)) this.toggle(false);
      };
    }

    get api() { return (this.getAttribute("api") || window.location.origin).replace(/\/$/, ""); }
    get token() { return this.getAttribute("token") || ""; }

    connectedCallback() { this.root.querySelector(".foot").href =
      this.getAttribute("href") || `${this.api}/#/notifications`; this.start(); }
    disconnectedCallback() { this.stop(); document.removeEventListener("click", this.onOutside); }
    attributeChangedCallback() { if (this.isConnected) { this.stop(); this.start(); } }

    async request(path, options = {}) {
      const response = await fetch(`${this.api}${path}`, { ...options, headers: {
        "Authorization": `Bearer ${this.token}`, "Content-Type": "application/json",
        ...(options.headers || {}) } });
      if (!response.ok) throw new Error(`tidings: ${response.status}`);
      return response.status === 204 ? null : response.json();
    }

    start() {
      if (!this.token) { this.setCount({ count: 0, display: "0" }); return; }
      this.refreshCount();
      const locale = this.getAttribute("locale");
      const url = `${this.api}/v1/me/stream?access_token=${encodeURIComponent(this.token)}` +
        (locale ? `&locale=${encodeURIComponent(locale)}` : "");
      this.source = new EventSource(url);
      this.source.addEventListener("unread", (event) => this.setCount(JSON.parse(event.data)));
      this.source.addEventListener("notification", () => { if (!this.panel.hidden) this.load(); });
    }

    stop() { if (this.source) { this.source.close(); this.source = null; } }

    async refreshCount() {
      try { this.setCount(await this.request("/v1/me/notifications/unread-count")); }
      catch (error) { /* the stream will bring the count */ }
    }

    setCount({ count, display }) {
      this.badge.textContent = display;
      this.badge.hidden = count === 0;
      this.button.setAttribute("aria-label",
        count === 0 ? "Notifications, none unread" : `Notifications, ${display} unread`);
      this.live.textContent = count === 0 ? "" : `${display} unread notifications`;
      this.dispatchEvent(new CustomEvent("tidings-count", { detail: { count, display } }));
    }

    toggle(open = this.panel.hidden) {
      this.panel.hidden = !open;
      this.button.setAttribute("aria-expanded", String(open));
      if (open) {
        this.load();
        this.request("/v1/me/notifications/seen", { method: "POST", body: "{}" }).catch(() => {});
        document.addEventListener("click", this.onOutside);
      } else {
        document.removeEventListener("click", this.onOutside);
      }
    }

    showSection(section) {
      this.section = section;
      for (const tab of this.root.querySelectorAll(".tab")) {
        tab.setAttribute("aria-selected", String(tab.dataset.section === section));
      }
      this.load();
    }

    async load() {
      const locale = this.getAttribute("locale");
      const query = `section=${this.section}&limit=10` +
        (locale ? `&locale=${encodeURIComponent(locale)}` : "");
      try {
        const page = await this.request(`/v1/me/notifications?${query}`);
        this.render(page.items);
      } catch (error) {
        this.list.replaceChildren(this.note("Notifications could not be loaded."));
      }
    }

    note(text) {
      const li = document.createElement("li");
      li.className = "empty";
      li.textContent = text;
      return li;
    }

    render(items) {
      if (!items.length) { this.list.replaceChildren(this.note("Nothing here yet.")); return; }
      this.list.replaceChildren(...items.map((item) => {
        const li = document.createElement("li");
        const button = document.createElement("button");
        button.className = `item${item.read ? "" : " unread"}`;
        button.dataset.id = item.id;
        const dot = document.createElement("span");
        dot.className = "dot";
        dot.setAttribute("aria-hidden", "true");
        const text = document.createElement("span");
        const title = document.createElement("span");
        title.className = "title";
        title.textContent = item.title;
        const meta = document.createElement("span");
        meta.className = "meta";
        const actors = item.actors.join(", ");
        meta.textContent = `${actors ? actors + " · " : ""}${relativeTime(item.created_at)}` +
          (item.read ? "" : " · unread");
        text.append(title, meta);
        button.append(dot, text);
        button.addEventListener("click", () => this.open(item));
        li.append(button);
        return li;
      }));
    }

    async open(item) {
      if (!item.read) {
        try {
          await this.request("/v1/me/notifications/read",
            { method: "POST", body: JSON.stringify({ ids: [item.id] }) });
        } catch (error) { /* still follow the link */ }
      }
      this.dispatchEvent(new CustomEvent("tidings-open", { detail: item }));
      const link = safeLink(item.link);
      if (link) window.location.assign(link);
      else { this.load(); this.refreshCount(); }
    }

    async markAllRead() {
      await this.request("/v1/me/notifications/read",
        { method: "POST", body: JSON.stringify({ all: true }) });
      this.load();
      this.refreshCount();
    }
  }

  if (!customElements.get("tidings-bell")) customElements.define("tidings-bell", TidingsBell);
})();
