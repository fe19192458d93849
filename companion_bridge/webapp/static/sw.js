// The companion's service worker: the app shell from cache when offline (the page then shows its
// last state from IndexedDB), and push notifications that carry only an opaque request id: the
// page fetches the request itself over its authenticated connection.
const CACHE = 'owliabot-companion-v1';
const SHELL = ['/app/', '/app/app.js', '/app/app.css', '/app/manifest.webmanifest', '/app/icon-192.png', '/app/icon-512.png'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== 'GET' || url.origin !== location.origin || !url.pathname.startsWith('/app/')) return;
  // Network first (a new version wins), the cached shell when offline.
  event.respondWith(fetch(event.request).then((resp) => {
    if (resp.ok) { const copy = resp.clone(); caches.open(CACHE).then((c) => c.put(event.request, copy)); }
    return resp;
  }).catch(() => caches.match(event.request, { ignoreSearch: true }).then((hit) => hit || caches.match('/app/'))));
});

self.addEventListener('push', (event) => {
  let id = '';
  try { id = String((event.data && event.data.json()).id || ''); } catch { id = ''; }
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) id = '';
  event.waitUntil(self.registration.showNotification('OwliaBot: an approval is waiting', {
    body: 'Open the companion to see it.', tag: id || 'owliabot-approval', data: { id }, requireInteraction: true,
  }));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: 'window' }).then((list) => {
    const open = list.find((c) => new URL(c.url).pathname.startsWith('/app/'));
    return open ? open.focus() : self.clients.openWindow('/app/');
  }));
});
