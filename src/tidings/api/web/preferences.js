/* The preferences page: per category (label, one-line description) a switch per channel this
 * server delivers over, then email (address, digest frequency and local hour), mutes: users by
 * name, pages by their title (typed titles resolved against the person's notifications). */
import { api, loadTypes } from "./session.js";
import { el } from "./dom.js";
import { knownObjects, objectTitle, resolveObject } from "./mutes.js";
import { offerPush } from "./push.js";

const CHANNEL_NAMES = { web: "Web", email: "Email", webhook: "Webhook", push: "Push" };

// "edit-user-talk" → "Edit user talk", as the server makes labels.
const humanise = (name) => { const words = name.replace(/[-_.:]+/g, " ").trim() || name;
                             return words[0].toUpperCase() + words.slice(1); };

// One row per category: its label and description are those of its type when it has one, or of
// the type named like the category; else the category's name, and its types' labels as the
// description (docs/web.md#preferences).
export function categoriesOf(types) {
  const groups = new Map();
  for (const type of types) {
    if (!groups.has(type.category)) groups.set(type.category, []);
    groups.get(type.category).push(type);
  }
  return [...groups].map(([name, members]) => {
    const lead = members.length === 1 ? members[0] : members.find((type) => type.name === name);
    return {
      name, members, label: lead ? lead.label || humanise(lead.name) : humanise(name),
      description: lead ? lead.description || "" : members.map((type) => type.label || type.name).join(", "),
      defaults: new Set(members.flatMap((type) => type.channels)),
      locked: new Set(members.filter((type) => type.mandatory).flatMap((type) => type.channels)),
    };
  }).sort((a, b) => a.label.localeCompare(b.label));
}

const hourName = (hour) => `${String(hour).padStart(2, "0")}:00`;

export async function showPreferences(main) {
  // load first, then show the form: nothing typed can be overwritten by a late answer
  const form = main.querySelector("#prefs");
  const status = main.querySelector("#prefs-status");
  form.hidden = true;
  main.querySelector("h1").after(el("p", { class: "status loading", role: "status", text: "Loading…" }));
  const [prefs, types] = await Promise.all([api("/v1/me/preferences"), loadTypes()]);
  main.querySelector(".loading").remove();
  const $ = (id) => main.querySelector(`#${id}`);
  const channels = types.enabled_channels && types.enabled_channels.length ? types.enabled_channels
    : ["web", "email", "webhook"];  // a server before enabled_channels: every channel
  $("no-email").hidden = channels.includes("email");
  offerPush($("push"), $("enable-push"), $("push-status"), channels.includes("push"));
  $("email").value = prefs.email.address || "";
  $("frequency").value = prefs.email.frequency;
  $("timezone").value = prefs.email.timezone;
  $("digest-hour").append(...Array.from({ length: 24 }, (_, hour) =>
    el("option", { value: String(hour), text: hourName(hour) })));
  $("digest-hour").value = String(prefs.email.digest_hour);
  if (Intl.supportedValuesOf) {
    $("zones").append(...Intl.supportedValuesOf("timeZone").map((zone) => el("option", { value: zone })));
  }
  $("locale").value = prefs.locale || "";
  $("muted-actors").value = prefs.muted.actors.join("\n");
  let mutedObjects = [...prefs.muted.objects];
  const showMutedObjects = () => {
    $("muted-objects").replaceChildren(...mutedObjects.map((key) => {
      const name = objectTitle(key);
      const unmute = el("button", { type: "button", class: "link", text: "Unmute",
                                    "aria-label": `Unmute ${name}` });
      unmute.addEventListener("click", () => {
        mutedObjects = mutedObjects.filter((other) => other !== key);
        showMutedObjects();
        $("mute-object-status").textContent = `${name} will be unmuted when you save.`;
      });
      return el("li", {}, el("span", { text: name, title: key }), unmute);
    }));
  };
  showMutedObjects();
  // the pages of the person's notifications: suggestions, and what a typed title resolves to
  const known = knownObjects().catch(() => new Map());
  known.then((found) => $("known-objects").replaceChildren(
    ...[...found.values()].map((title) => el("option", { value: title }))));
  const showFrequency = () => {
    const never = $("frequency").value === "never";
    $("unsubscribed").textContent = never ? "You receive no email." : "";
    const digest = ["daily", "weekly"].includes($("frequency").value);
    $("digest-hour").disabled = !digest;
    $("timezone").disabled = !digest;
  };
  $("frequency").addEventListener("change", showFrequency);
  showFrequency();

  $("matrix-head").append(...channels.map((channel) => el("th", { scope: "col", text: CHANNEL_NAMES[channel] || channel })));
  $("matrix").replaceChildren(...categoriesOf(types.items).map((category) => {
    const head = el("th", { scope: "row" }, el("span", { class: "label", text: category.label }));
    if (category.description) head.append(el("span", { class: "description", text: category.description }));
    const row = el("tr", {}, head);
    for (const channel of channels) {
      const switches = prefs.channels[category.name] || {};
      const locked = category.locked.has(channel);
      const box = el("input", { type: "checkbox", "data-category": category.name, "data-channel": channel,
                                "aria-label": `${category.label} by ${CHANNEL_NAMES[channel] || channel}`,
                                disabled: locked, title: locked ? "Always on" : null });
      box.checked = locked || (channel in switches ? switches[channel] : category.defaults.has(channel));
      row.append(el("td", {}, box));
    }
    return row;
  }));

  form.hidden = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    // switches of categories not shown (no type today) are kept as they are
    const switches = structuredClone(prefs.channels);
    for (const box of form.querySelectorAll("input[data-category]:not(:disabled)")) {
      (switches[box.dataset.category] ||= {})[box.dataset.channel] = box.checked;
    }
    const lines = (id) => $(id).value.split("\n").map((v) => v.trim()).filter(Boolean);
    const typed = $("mute-object").value.trim();
    let objects = mutedObjects;
    if (typed) {
      const key = resolveObject(typed, await known);
      if (key === null) {
        $("mute-object-status").textContent = `No page called “${typed}” is in your notifications: `
          + "type its title as a notification names it, or use “Mute” on one of its notifications.";
        status.textContent = "Not saved: a page to mute was not found.";
        return;
      }
      objects = mutedObjects.includes(key) ? mutedObjects : [...mutedObjects, key];
    }
    const body = {
      email: { address: $("email").value.trim() || null, frequency: $("frequency").value,
               timezone: $("timezone").value.trim() || "UTC", digest_hour: Number($("digest-hour").value),
               muted_objects: (prefs.email && prefs.email.muted_objects) || [],  // set by unsubscribe links: kept
               delays: (prefs.email && prefs.email.delays) || {} },  // set by the application: kept
      channels: switches, muted: { actors: lines("muted-actors"), objects },
      locale: $("locale").value || null,
      webhook: prefs.webhook || { url: null },  // set by the application: kept
      push: prefs.push || { delays: {} },  // set by the application: kept
    };
    try {
      Object.assign(prefs, await api("/v1/me/preferences", { method: "PUT", body: JSON.stringify(body) }));
      mutedObjects = [...prefs.muted.objects];
      showMutedObjects();
      $("mute-object").value = "";
      $("mute-object-status").textContent = typed ? `${objectTitle(objects.at(-1))} is muted.` : "";
      status.textContent = "Saved.";
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
    }
  });
}
