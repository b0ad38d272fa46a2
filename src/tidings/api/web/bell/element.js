/* The <tidings-bell> element. Part of /tidings-bell.js (see api/web.py). */
class TidingsBell extends HTMLElement {
  static get observedAttributes() {
    return ["token", "server", "api", "locale", "href", "expiry-notice", ...Object.keys(LABELS).map((key) => `label-${key}`)];
  }

  constructor() {
    super();
    this.root = this.attachShadow({ mode: "open" });
    this.section = "alert";
    this.source = null;
    this.loaded = false;
    this.unseen = 0;
    if ("adoptedStyleSheets" in this.root && typeof CSSStyleSheet === "function") {
      const sheet = new CSSStyleSheet();  // no <style>: works under a strict style-src too
      sheet.replaceSync(STYLE);
      this.root.adoptedStyleSheets = [sheet];
    } else {
      const style = document.createElement("style");
      style.textContent = STYLE;
      this.root.append(style);
    }
    const shell = document.createElement("template");
    shell.innerHTML = `
      <button class="bell" part="button" aria-haspopup="dialog" aria-expanded="false"
              aria-controls="panel">${SVG(ICONS.bell)}<span class="badge" part="badge" hidden></span></button>
      <span class="sr live" aria-live="polite"></span>
      <div class="panel" id="panel" part="panel" role="dialog" aria-labelledby="heading" hidden>
        <div class="head"><h2 id="heading" tabindex="-1"></h2><button class="action mark-all"></button></div>
        <div class="tabs" role="tablist">
          <button class="tab" role="tab" id="tab-alert" data-section="alert" aria-controls="body"
                  aria-selected="true"><span class="name" data-label="alerts"></span><span class="count" hidden></span></button>
          <button class="tab" role="tab" id="tab-message" data-section="message" aria-controls="body"
                  aria-selected="false" tabindex="-1"><span class="name" data-label="messages"></span><span class="count" hidden></span></button>
        </div>
        <div class="body" id="body" role="tabpanel" aria-labelledby="tab-alert"></div>
        <a class="foot" part="all"></a>
      </div>`;
    this.root.append(shell.content);
    const $ = (selector) => this.root.querySelector(selector);
    this.button = $(".bell");
    this.badge = $(".badge");
    this.live = $(".live");
    this.panel = $(".panel");
    this.body = $(".body");
    this.tabs = [...this.root.querySelectorAll(".tab")];
    this.button.addEventListener("click", () => this.toggle());
    $(".mark-all").addEventListener("click", () => this.markAllRead());
    for (const tab of this.tabs) tab.addEventListener("click", () => this.showSection(tab.dataset.section, true));
    this.root.querySelector(".tabs").addEventListener("keydown", (event) => this.onTabKey(event));
    this.body.addEventListener("keydown", (event) => this.onListKey(event));
    this.onEscape = (event) => {
      if (event.key === "Escape" && !this.panel.hidden) { this.toggle(false); this.button.focus(); }
    };
    this.onOutside = (event) => { if (!event.composedPath().includes(this)) this.toggle(false); };
    this.onViewport = () => this.place();
  }

  // The tidings server: calls, the stream, and the item links and avatars given as paths
  // resolve against it, not against the page the bell is on. "api" is its older name.
  get api() {
    return (this.getAttribute("server") || this.getAttribute("api") || window.location.origin).replace(/\/$/, "");
  }
  get token() { return this.getAttribute("token") || ""; }
  set token(value) { this.setAttribute("token", value); }  // a new token: the page hands it
  label(key) { return this.getAttribute(`label-${key}`) || LABELS[key]; }

  // A link or avatar as the server gave it; on a page of another origin than the server, a
  // path ("/wiki/Fog") is made absolute against the server, whose path it is. Null when it is
  // not one to follow (kit's safeLink).
  resolve(link) {
    const safe = safeLink(link);
    if (!safe || !safe.startsWith("/")) return safe;
    try {
      const server = new URL(`${this.api}/`, window.location.href);
      return server.origin === window.location.origin ? safe : new URL(safe, server).href;
    } catch (error) { return null; }
  }

  // One stream per element: attributes set before it is connected (or while it is being
  // upgraded) are read by connectedCallback, not each by a stream of its own.
  connectedCallback() { this.connected = true; this.applyLabels(); this.stop(); this.start(); }
  disconnectedCallback() { this.connected = false; this.stop(); this.toggle(false); }
  attributeChangedCallback(name, before, after) {
    if (!this.connected || before === after) return;
    if (name === "href" || name.startsWith("label-")) { this.applyLabels(); return; }
    if (name === "expiry-notice") { this.watchExpiry(); return; }
    this.stop();
    this.loaded = false;
    this.start();
  }

  applyLabels() {
    this.root.querySelector("h2").textContent = this.label("title");
    this.root.querySelector(".mark-all").textContent = this.label("mark-all");
    for (const name of this.root.querySelectorAll("[data-label]")) name.textContent = this.label(name.dataset.label);
    const foot = this.root.querySelector(".foot");
    foot.textContent = this.label("see-all");
    foot.href = this.getAttribute("href") || `${this.api}/#/notifications`;
    if (this.counts) this.setCount(this.counts, false);  // the labels changed, not the counts
    else this.button.setAttribute("aria-label", this.label("title"));
  }

  // Tell the page (docs/web.md): events bubble; tidings-open may be cancelled.
  emit(name, detail) {
    return this.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, cancelable: name === "tidings-open" }));
  }

  async request(path, options = {}) {
    const response = await fetch(`${this.api}${path}`, { ...options, headers: {
      "Authorization": `Bearer ${this.token}`, "Content-Type": "application/json",
      ...(options.headers || {}) } });
    if (!response.ok) throw new Error(`tidings: ${response.status}`);
    return response.status === 204 ? null : response.json();
  }

  // "tidings-token-expiring", expiry-notice seconds (default 60) before the token's exp, or
  // half-way to it for a token with less than twice that left; the page hands a new token
  // (bell.token = fresh) and the bell carries on with it.
  watchExpiry() {
    clearTimeout(this.expiryTimer);
    const expires = expiryOf(this.token);
    if (!this.connected || expires === null) return;
    const notice = Math.max(0, Number(this.getAttribute("expiry-notice") || 60)) * 1000;
    const left = expires * 1000 - Date.now();
    const wait = left > 2 * notice ? left - notice : Math.max(0, left / 2);
    this.expiryTimer = setTimeout(() => {
      const seconds = Math.max(0, Math.round(expires - Date.now() / 1000));
      this.emit("tidings-token-expiring", { expires_at: new Date(expires * 1000).toISOString(), expires_in: seconds });
    }, wait);
  }

  start() {
    this.watchExpiry();
    if (!this.token) { this.setCount({ count: 0, display: "0", unseen: 0, unseen_display: "0" }); return; }
    this.refreshCount();
    const locale = this.getAttribute("locale");
    const url = `${this.api}/v1/me/stream?access_token=${encodeURIComponent(this.token)}` +
      (locale ? `&locale=${encodeURIComponent(locale)}` : "");
    this.source = new EventSource(url);
    this.source.addEventListener("unread", (event) => this.setCount(JSON.parse(event.data)));
    this.source.addEventListener("notification", (event) => this.arrived(JSON.parse(event.data)));
    this.source.addEventListener("timeline", (event) => this.emit("tidings-timeline", JSON.parse(event.data)));
    // Back from a gap longer than the server replays (docs/api.md, Resuming): the list is stale.
    this.source.addEventListener("resync", () => { if (!this.panel.hidden) this.load(); else this.loaded = false; });
  }

  stop() {
    clearTimeout(this.expiryTimer);
    if (this.source) { this.source.close(); this.source = null; }
  }

  async refreshCount() {
    try { this.setCount(await this.request("/v1/me/notifications/unread-count")); }
    catch (error) { /* the stream will bring the count */ }
  }

  // The badge shows the unseen (servers before that count: the unread). While the flyout is
  // open, news is seen at once and the tabs' unread counts follow.
  setCount(counts, fromServer = true) {
    const unseen = counts.unseen ?? counts.count;
    const shown = counts.unseen_display ?? counts.display;
    const changed = !this.counts || this.counts.count !== counts.count || this.counts.unseen !== unseen;
    this.counts = { ...counts, unseen, unseen_display: shown };
    this.unseen = unseen;
    this.badge.textContent = shown;
    this.badge.hidden = unseen === 0;
    this.button.setAttribute("aria-label", unseen === 0 ? this.label("title")
      : `${this.label("title")}, ${shown} ${this.label("unseen")}`);
    if (fromServer && !this.panel.hidden) {
      this.refreshTabs();
      if (unseen > 0) this.markSeen();
    }
    if (changed) this.emit("tidings-count", this.counts);
  }

  arrived(item) {
    this.live.textContent = `${this.label("new-one")}: ${item.title}`;
    if (!this.panel.hidden) this.load();
    else this.loaded = false;
  }

  toggle(open = this.panel.hidden) {
    if (open === !this.panel.hidden) return;
    this.panel.hidden = !open;
    this.button.setAttribute("aria-expanded", String(open));
    if (open) {
      this.place();
      window.addEventListener("resize", this.onViewport);
      window.addEventListener("scroll", this.onViewport, { passive: true, capture: true });
      document.addEventListener("click", this.onOutside);
      document.addEventListener("keydown", this.onEscape);
      if (!this.loaded) this.showLoading();
      this.load();
      this.refreshTabs();
      this.markSeen();
      this.root.querySelector(".tab[aria-selected='true']").focus({ preventScroll: true });
    } else {
      window.removeEventListener("resize", this.onViewport);
      window.removeEventListener("scroll", this.onViewport, { capture: true });
      document.removeEventListener("click", this.onOutside);
      document.removeEventListener("keydown", this.onEscape);
    }
    this.emit("tidings-toggle", { open });
  }

  // Fixed to the viewport and kept inside it: under the bell, toward the side with room.
  place() {
    const margin = 8;
    const width = Math.min(384, document.documentElement.clientWidth - 2 * margin);
    const viewport = document.documentElement.clientWidth;
    const bell = this.button.getBoundingClientRect();
    let side = this.getAttribute("position");
    if (side !== "left" && side !== "right") side = bell.left + bell.width / 2 > viewport / 2 ? "right" : "left";
    const left = side === "right" ? bell.right - width : bell.left;
    const top = bell.bottom + 6;
    Object.assign(this.panel.style, {
      width: `${width}px`, top: `${top}px`,
      left: `${Math.max(margin, Math.min(left, viewport - width - margin))}px`,
      maxHeight: `${Math.max(240, Math.min(window.innerHeight * 0.8, window.innerHeight - top - margin))}px`,
    });
  }

  markSeen() {
    this.setCount({ ...this.counts, unseen: 0, unseen_display: "0" }, false);
    this.request("/v1/me/notifications/seen", { method: "POST", body: "{}" }).catch(() => {});
  }

  async refreshTabs() {
    await Promise.all(this.tabs.map(async (tab) => {
      const badge = tab.querySelector(".count");
      try {
        const counts = await this.request(`/v1/me/notifications/unread-count?section=${tab.dataset.section}`);
        badge.textContent = counts.display;
        badge.hidden = counts.count === 0;
      } catch (error) { badge.hidden = true; }
      const name = tab.querySelector(".name").textContent;
      if (badge.hidden) tab.removeAttribute("aria-label");
      else tab.setAttribute("aria-label", `${name}, ${badge.textContent} ${this.label("unread")}`);
    }));
  }

  showSection(section, focus = false) {
    this.section = section;
    for (const tab of this.tabs) {
      const selected = tab.dataset.section === section;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      if (selected) { this.body.setAttribute("aria-labelledby", tab.id); if (focus) tab.focus(); }
    }
    this.showLoading();
    this.load();
  }

  onTabKey(event) {
    const at = this.tabs.findIndex((tab) => tab.dataset.section === this.section);
    const step = { ArrowRight: 1, ArrowLeft: -1, Home: -at, End: this.tabs.length - 1 - at }[event.key];
    if (step === undefined) return;
    event.preventDefault();
    this.showSection(this.tabs[(at + step + this.tabs.length) % this.tabs.length].dataset.section, true);
  }

  onListKey(event) {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    const items = [...this.body.querySelectorAll(".item")];
    const at = items.indexOf(this.root.activeElement?.closest?.(".item") || this.root.activeElement);
    const next = items[Math.max(0, Math.min(items.length - 1, at + (event.key === "ArrowDown" ? 1 : -1)))];
    if (next) { event.preventDefault(); next.focus(); }
  }

  showLoading() {
    this.body.setAttribute("aria-busy", "true");
    const rows = Array.from({ length: 3 }, () => {
      const row = document.createElement("div");
      row.className = "skeleton";
      row.setAttribute("aria-hidden", "true");
      row.innerHTML = '<span class="disc"></span><span class="lines"><span></span><span></span></span>';
      return row;
    });
    this.body.replaceChildren(...rows);
  }

  async load() {
    const locale = this.getAttribute("locale");
    const section = this.section;
    const mine = this.loads = (this.loads || 0) + 1;  // only the newest answer is shown
    const query = `section=${section}&limit=15` + (locale ? `&locale=${encodeURIComponent(locale)}` : "");
    try {
      const page = await this.request(`/v1/me/notifications?${query}`);
      if (mine !== this.loads) return;
      this.loaded = true;
      this.render(page.items);
    } catch (error) {
      this.body.replaceChildren(this.note("inbox", this.label("error"), ""));
    } finally {
      this.body.removeAttribute("aria-busy");
    }
  }

  note(iconKey, title, hint) {
    const box = document.createElement("div");
    box.className = "note";
    const strong = document.createElement("strong");
    strong.textContent = title;
    box.append(icon(iconKey), strong, hint);
    return box;
  }

  render(items) {
    if (!items.length) {
      this.body.replaceChildren(this.note("inbox", this.label("empty"), this.label("empty-hint")));
      return;
    }
    const active = this.root.activeElement;  // kept where it was, across the new rendering
    const focused = active?.dataset?.id && `.${active.classList[0]}[data-id="${CSS.escape(active.dataset.id)}"]`;
    const groups = byDay(items).flatMap(([day, members]) => {
      const heading = document.createElement("h3");
      heading.className = "day";
      heading.textContent = this.label(day);
      const list = document.createElement("ul");
      list.setAttribute("aria-label", this.label(day));
      list.append(...members.map((item) => this.row(item)));
      return [heading, list];
    });
    this.body.replaceChildren(...groups);
    if (focused) this.body.querySelector(focused)?.focus();
  }

  row(item) {
    const li = document.createElement("li");
    li.className = `row${item.read ? "" : " unread"}`;
    const link = this.resolve(item.link);
    const main = document.createElement(link ? "a" : "button");
    main.className = `item${item.read ? "" : " unread"}`;
    main.dataset.id = item.id;
    if (link) main.href = link;
    const text = document.createElement("span");
    text.className = "text";
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = item.title;
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = relativeTime(item.created_at) + (item.count > 1 ? ` · ${item.count} notifications` : "");
    const state = document.createElement("span");
    state.className = "sr";
    state.textContent = item.read ? "" : ` (${this.label("unread")})`;
    text.append(title, state, meta);
    main.append(avatar(item.actor || "", item.type, item.category, this.resolve(item.payload?.avatar_url)), text);
    main.addEventListener("click", (event) => this.open(item, event));
    const mark = document.createElement("button");
    mark.className = "mark";
    mark.dataset.id = item.id;
    const word = this.label(item.read ? "mark-unread" : "mark-read");
    mark.setAttribute("aria-label", `${word}: ${item.title}`);
    mark.title = word;
    mark.innerHTML = '<span class="dot"></span>';
    mark.addEventListener("click", () => this.mark(item, !item.read, mark));
    li.append(main, mark);
    return li;
  }

  async mark(item, read, control) {
    try {
      await this.request(`/v1/me/notifications/${read ? "read" : "unread"}`,
        { method: "POST", body: JSON.stringify({ ids: [item.id] }) });
    } catch (error) { return; }
    item.read = read;
    const li = control.closest("li");
    const fresh = this.row(item);
    li.replaceWith(fresh);
    fresh.querySelector(".mark").focus();
    this.emit("tidings-read", { ids: [item.id], read });
    this.refreshTabs();
  }

  async open(item, event) {
    const modified = event.button === 1 || event.metaKey || event.ctrlKey || event.shiftKey;
    if (!modified) event.preventDefault();
    if (!item.read) {
      try {
        await this.request("/v1/me/notifications/read",
          { method: "POST", body: JSON.stringify({ ids: [item.id] }), keepalive: true });
        this.emit("tidings-read", { ids: [item.id], read: true });
      } catch (error) { /* still follow the link */ }
    }
    if (modified) { this.load(); return; }  // the browser opens it elsewhere
    const proceed = this.emit("tidings-open", item);
    const link = this.resolve(item.link);
    if (proceed && link) window.location.assign(link);
    else { this.load(); this.refreshTabs(); }
  }

  async markAllRead() {
    const section = this.section;
    await this.request("/v1/me/notifications/read",
      { method: "POST", body: JSON.stringify({ all: true, section }) });
    this.emit("tidings-read", { all: true, section, read: true });
    this.load();
    this.refreshTabs();
    this.refreshCount();
  }
}

TidingsBell.kit = { safeLink, relativeTime, dayOf, byDay, avatar, icon, iconName, LABELS };
if (!customElements.get("tidings-bell")) customElements.define("tidings-bell", TidingsBell);
