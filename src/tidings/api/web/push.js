/* "Enable push" on the preferences page: only when the person presses it does the browser ask
 * for permission, register the service worker (/push-sw.js), subscribe with the server's VAPID
 * key and hand the subscription to tidings (docs/push.md). Nothing is asked on page load. */
import { api } from "./session.js";

const supported = () => "serviceWorker" in navigator && "PushManager" in window
  && "Notification" in window;

const workerUrl = () => new URL("push-sw.js", document.baseURI).href;

export function offerPush(fieldset, button, status, enabled) {
  fieldset.hidden = !enabled;
  if (!enabled) return;
  if (!supported()) {
    button.disabled = true;
    status.textContent = "This browser cannot receive push notifications.";
    return;
  }
  if (Notification.permission === "granted") {
    navigator.serviceWorker.getRegistration(workerUrl()).then(async (registration) => {
      if (registration && await registration.pushManager.getSubscription()) {
        status.textContent = "Push is on for this browser.";
      }
    });
  }
  button.addEventListener("click", async () => {
    status.textContent = "";
    try {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") {
        status.textContent = "Not enabled: the browser's permission was not given.";
        return;
      }
      const { public_key: key } = await api("/v1/push/public-key");
      const registration = await navigator.serviceWorker.register(workerUrl());
      await navigator.serviceWorker.ready;
      const subscription = await registration.pushManager.getSubscription()
        || await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      await api("/v1/me/push-subscriptions", { method: "POST", body: JSON.stringify(subscription) });
      status.textContent = "Push is on for this browser.";
    } catch (error) {
      status.textContent = `Not enabled: ${error.message}`;
    }
  });
}
