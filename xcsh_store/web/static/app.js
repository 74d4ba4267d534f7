// Live updates: the server sends an "index" event each time a sync commits; the page then
// reloads what it shows (keeping its place). No inline script anywhere: the page's policy
// allows only this file.
"use strict";
(function () {
  const source = document.body.dataset.live;
  if (!source || !window.EventSource) return;
  const status = document.getElementById("live-status");
  let pending = null;
  const events = new EventSource(source);
  // A page left behind must not keep its stream (the browser allows few per server).
  window.addEventListener("pagehide", function () { events.close(); });
  events.addEventListener("index", function () {
    if (status) status.hidden = false;
    // A burst of syncs is one reload; an open folded branch or a typed query is not lost.
    const typing = document.activeElement && document.activeElement.tagName === "INPUT";
    const reading = document.querySelector("details[open]");
    if (pending || typing || reading) return;
    pending = setTimeout(function () {
      sessionStorage.setItem("xcsh-store-scroll", String(window.scrollY));
      window.location.reload();
    }, 300);
  });
  const scroll = sessionStorage.getItem("xcsh-store-scroll");
  if (scroll !== null) {
    sessionStorage.removeItem("xcsh-store-scroll");
    if (!window.location.hash) window.scrollTo(0, Number(scroll));
  }
})();
