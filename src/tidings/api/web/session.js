/* The signed-in user: a token kept for this tab only, and calls to the API with it. */
const KEY = "tidings.token";
const listeners = [];

export const token = () => sessionStorage.getItem(KEY) || "";

export function setToken(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
}

// "#token=…" (a link from the application or the demo): kept, then taken off the address bar.
export function takeTokenFromFragment() {
  const match = window.location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (!match) return false;
  setToken(decodeURIComponent(match[1]));
  history.replaceState(null, "", window.location.pathname + "#/notifications");
  return true;
}

export function userOf(jwt) {
  try { return JSON.parse(atob(jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub; }
  catch (error) { return ""; }
}

// Called when the server says the token is no good any more.
export function onSignedOut(callback) { listeners.push(callback); }

// path: "/v1/…", taken relative to the page, so the inbox works mounted under a prefix too.
export async function api(path, options = {}) {
  const response = await fetch(path.replace(/^\//, ""), { ...options, headers: {
    "Authorization": `Bearer ${token()}`, "Content-Type": "application/json" } });
  if (response.status === 401) {
    setToken("");
    for (const callback of listeners) callback();
    throw new Error("signed out");
  }
  const data = response.status === 204 ? null : await response.json();
  if (!response.ok) throw new Error(data && data.error ? data.error.message : response.status);
  return data;
}

// The event types, once per page: labels for filters, rows and preferences.
let types = null;
export function loadTypes() {
  types ||= api("/v1/types").catch((error) => { types = null; throw error; });
  return types;
}

export const labelOf = (catalog, name) =>
  (catalog.items.find((type) => type.name === name) || {}).label || name;
