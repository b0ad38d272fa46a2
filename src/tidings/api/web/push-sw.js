/* The web inbox's service worker (served at /push-sw.js): shows a Web Push as a notification
 * and, on a click, focuses a window already showing the item's link or opens one
 * (docs/push.md). The payload is tidings' small JSON: title, body, link, unread, id, group. */

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// What a push shows: the bundle's group is the tag, so a newer push replaces the older.
function notificationOf(data) {
  const unread = Number.isInteger(data.unread) && data.unread > 0 ? `${data.unread} unread` : "";
  return {
    title: data.title || "New notification",
    options: {
      body: data.body || unread, tag: data.group || undefined, renotify: Boolean(data.group),
      data: { link: data.link || null, id: data.id || null },
    },
  };
}

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { title: event.data.text() };
  }
  const { title, options } = notificationOf(data);
  event.waitUntil(self.registration.showNotification(title, options));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const start = new URL(self.registration.scope);
  const link = new URL((event.notification.data && event.notification.data.link) || start, start).href;
  // A window's url is the one it was opened with (the inbox moves between pages by its
  // fragment): one on the same page, fragment aside, is focused and sent to the link.
  const page = (url) => url.split("#")[0];
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const showing = windows.find((client) => page(client.url) === page(link));
    if (!showing) return self.clients.openWindow(link);
    const focused = await showing.focus();
    if (showing.url !== link) await showing.navigate(link).catch(() => null);
    return focused;
  })());
});
