// The page's one script (its policy allows no other, and no inline script): times in the
// reader's zone, keys, search as you type, and live updates (the server sends an "index"
// event each time a sync commits; the page then reloads what it shows, keeping its place).
"use strict";
(function () {
  // -- times: <time datetime> shown in the reader's zone, the exact time on hover --------
  // One clock across the CLI and the web: 24-hour (hourCycle h23), as the CLI's tables print
  // it; day and month names and their order come from the reader's locale.
  const sameDay = function (a, b) { return a.toDateString() === b.toDateString(); };
  const dayFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
  const yearFormat = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric" });
  const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  const exactFormat = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    second: "2-digit", fractionalSecondDigits: 3, timeZoneName: "short", hourCycle: "h23",
  });
  function humanTimes(root) {
    const now = new Date();
    root.querySelectorAll("time.moment").forEach(function (element) {
      const moment = new Date(element.getAttribute("datetime"));
      if (isNaN(moment.getTime())) return;
      let day = "today";
      if (!sameDay(moment, now)) {
        day = moment.getFullYear() === now.getFullYear() ? dayFormat.format(moment) : yearFormat.format(moment);
      }
      element.textContent = day + " " + timeFormat.format(moment);
      element.title = exactFormat.format(moment);
    });
  }
  humanTimes(document);

  // -- keys: / search, j/k move, Enter opens, b next branch point -------------------------
  function searchBox() {
    return document.getElementById("search-box") || document.querySelector("form.quick input[name=q]");
  }
  function items() {
    // Search hits, the sessions list's rows, or a session's entries (its shown branch).
    const hits = document.querySelectorAll("li.hit");
    if (hits.length) return Array.from(hits);
    const rows = document.querySelectorAll("table.sessions tr.row");
    if (rows.length) return Array.from(rows);
    return Array.from(document.querySelectorAll("article.entry:not(.folded-entry)"));
  }
  let current = -1;
  function select(index) {
    const all = items();
    if (!all.length) return;
    current = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (item) { item.classList.remove("selected"); });
    const item = all[current];
    item.classList.add("selected");
    item.scrollIntoView({ block: "nearest" });
  }
  function open() {
    const all = items();
    if (current < 0 || current >= all.length) return;
    const link = all[current].querySelector("a.hit-link, a.session-link, a.anchor");
    if (link) link.click();
  }
  function nextBranchPoint() {
    const points = Array.from(document.querySelectorAll("article.branch-entry:not(.folded-entry)"));
    if (!points.length) return;
    const top = 70;
    const next = points.find(function (point) { return point.getBoundingClientRect().top > top + 1; }) || points[0];
    const all = items();
    current = all.indexOf(next);
    all.forEach(function (item) { item.classList.remove("selected"); });
    next.classList.add("selected");
    next.scrollIntoView({ block: "start" });
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    const editing = target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA");
    if (editing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.key === "/") {
      const box = searchBox();
      if (box) { event.preventDefault(); box.focus(); box.select(); }
    } else if (event.key === "j") {
      select(current + 1);
    } else if (event.key === "k") {
      select(current - 1);
    } else if (event.key === "Enter" && current >= 0) {
      event.preventDefault();
      open();
    } else if (event.key === "b") {
      nextBranchPoint();
    }
  });

  // -- search as you type: the results of the newest query only ---------------------------
  const form = document.getElementById("search-form");
  const results = document.getElementById("results");
  if (form && results) {
    let timer = null;
    let asked = 0;
    const run = function () {
      const query = new URLSearchParams(new FormData(form)).toString();
      const number = ++asked;
      fetch("/search?" + query, { headers: { accept: "text/html" } })
        .then(function (response) { return response.text(); })
        .then(function (html) {
          if (number !== asked) return;
          const page = new DOMParser().parseFromString(html, "text/html");
          const found = page.getElementById("results");
          if (!found) return;
          results.replaceChildren.apply(results, Array.from(found.childNodes).map(function (node) {
            return document.importNode(node, true);
          }));
          humanTimes(results);
          current = -1;
          history.replaceState(null, "", "/search?" + query);
          results.dataset.query = query;
        })
        .catch(function () {});
    };
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(run, 120);
    });
  }

  // -- copy buttons: the resume command onto the clipboard ----------------------------------
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.addEventListener("click", function () {
      if (!navigator.clipboard) { button.textContent = "select it to copy"; return; }
      navigator.clipboard.writeText(button.dataset.copy).then(
        function () { button.textContent = "copied"; },
        function () { button.textContent = "select it to copy"; });
    });
  });

  // -- live updates -------------------------------------------------------------------------
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
