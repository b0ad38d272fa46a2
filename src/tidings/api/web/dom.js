/* Small DOM helpers of the web inbox. Values are placed with textContent, never as markup. */
export const kit = customElements.get("tidings-bell").kit;

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

// Say something to screen readers (the page's one polite live region).
export function announce(text) {
  const region = document.getElementById("announce");
  region.textContent = "";
  setTimeout(() => { region.textContent = text; }, 50);
}

export function skeleton(rows = 4) {
  return Array.from({ length: rows }, () => el("div", { class: "skeleton", "aria-hidden": "true" },
    el("span", { class: "disc" }), el("span", { class: "lines" }, el("span"), el("span"))));
}

export function emptyState(title, hint) {
  return el("div", { class: "empty" }, kit.icon("inbox"), el("strong", { text: title }),
            el("span", { text: hint }));
}

// A list grouped by day ("Today", "Yesterday", "Earlier"): append(items) adds to the last
// group while the day stays the same.
export function dayGroups(container) {
  let day = null;
  let list = null;
  return (items, render) => {
    for (const item of items) {
      const itemDay = kit.dayOf(item.created_at);
      if (itemDay !== day) {
        day = itemDay;
        const title = kit.LABELS[day];
        list = el("ul", { class: "rows", "aria-label": title });
        container.append(el("section", { class: "day" }, el("h2", { text: title }), list));
      }
      list.append(render(item));
    }
  };
}

// Calls more() while the sentinel is near the viewport; returns a function that stops it.
export function infinite(sentinel, more) {
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) more();
  }, { rootMargin: "200px" });
  observer.observe(sentinel);
  return () => observer.disconnect();
}

export const nearViewport = (node) => node.getBoundingClientRect().top < window.innerHeight + 200;

// A group of role="tab" buttons: click or arrow keys choose one; onChoose(button).
export function tabs(list, onChoose) {
  const buttons = [...list.querySelectorAll("[role=tab]")];
  const choose = (button, focus) => {
    for (const other of buttons) {
      other.setAttribute("aria-selected", String(other === button));
      other.tabIndex = other === button ? 0 : -1;
    }
    if (focus) button.focus();
    onChoose(button);
  };
  for (const button of buttons) button.addEventListener("click", () => choose(button, false));
  list.addEventListener("keydown", (event) => {
    const at = buttons.indexOf(document.activeElement);
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (at < 0 || step === undefined) return;
    event.preventDefault();
    choose(buttons[(at + step + buttons.length) % buttons.length], true);
  });
}
