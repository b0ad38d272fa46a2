/* The web inbox: sign-in, then notifications, following and preferences pages, each a module.
 * No build step; every value from the server is placed as text, never as markup. */
import { onSignedOut, setToken, takeTokenFromFragment, token, userOf } from "./session.js";
import { el } from "./dom.js";
import { showNotifications } from "./notifications.js";
import { showFollowing } from "./following.js";
import { showPreferences } from "./preferences.js";

const main = document.getElementById("main");
const bell = document.getElementById("bell");
// The inbox's own server, wherever it is mounted (/ or a prefix such as /notifications/).
bell.setAttribute("server", new URL(".", document.baseURI).href);
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signOut = document.getElementById("sign-out");
const PAGES = {
  "#/notifications": ["notifications", "Notifications", (node) => showNotifications(node, bell)],
  "#/following": ["following", "Following", (node) => showFollowing(node, bell)],
  "#/preferences": ["preferences", "Preferences", showPreferences],
};

function mount(id, title) {
  main.replaceChildren(document.getElementById(id).content.cloneNode(true));
  document.title = title ? `${title} · tidings` : "tidings";
  for (const link of nav.querySelectorAll("a")) {
    if (link.getAttribute("href") === window.location.hash) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  return main;
}

// Signed out, the page shows the sign-in form only: no navigation, no bell.
function showSignedIn(signedIn) {
  nav.hidden = !signedIn;
  bell.hidden = !signedIn;
  signOut.hidden = !signedIn;
  who.textContent = signedIn && userOf(token()) ? `Signed in as ${userOf(token())}` : "";
  if (!signedIn) bell.removeAttribute("token");
  else if (bell.getAttribute("token") !== token()) bell.setAttribute("token", token());
}

async function showSignIn() {
  showSignedIn(false);
  mount("sign-in", "Sign in");
  main.querySelector("#token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(main.querySelector("#token").value.trim());
    window.location.hash = "#/notifications";
    route();
  });
  try {
    const response = await fetch("demo/users");
    if (!response.ok) return;
    const users = await response.json();
    const box = main.querySelector("#demo-users");
    box.hidden = false;
    box.querySelector(".users").replaceChildren(...users.items.map((user) => {
      const link = el("a", { href: `#token=${encodeURIComponent(user.token)}`, class: "user" },
                      customElements.get("tidings-bell").kit.avatar(user.user, "", "", null),
                      el("span", { text: `Sign in as ${user.user}` }));
      return el("li", {}, link);  // the fragment changes: hashchange signs in
    }));
  } catch (error) { /* not a demo */ }
}

function route() {
  takeTokenFromFragment();
  if (!token()) { showSignIn(); return; }
  showSignedIn(true);
  const [id, title, show] = PAGES[window.location.hash] || PAGES["#/notifications"];
  show(mount(id, title));
}

onSignedOut(route);
signOut.addEventListener("click", () => { setToken(""); route(); });
window.addEventListener("hashchange", route);
route();
