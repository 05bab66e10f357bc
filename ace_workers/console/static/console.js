// ace-workers console: the one script. Pages work without it; it refreshes live pages.
// An element with data-refresh-seconds="N" reloads its page every N seconds, unless the
// person is typing in a field (their input would be lost).
(function () {
  "use strict";
  var live = document.querySelector("[data-refresh-seconds]");
  if (!live) { return; }
  var seconds = Math.max(2, parseInt(live.getAttribute("data-refresh-seconds"), 10) || 5);
  window.setInterval(function () {
    var active = document.activeElement;
    if (active && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) { return; }
    window.location.reload();
  }, seconds * 1000);
})();
