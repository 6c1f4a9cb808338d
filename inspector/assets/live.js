// turnlog inspector: a session page follows its session live. Each new event of the
// log shows as a line (text only), and when a turn ends or waits for people the
// session page is loaded again to show it whole. Without script the page works the same, reloaded by hand.
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || !window.EventSource) { return; }
  var list = box.querySelector("ol");
  var url = "/ui/sessions/" + encodeURIComponent(box.dataset.session) + "/live?after=" + encodeURIComponent(box.dataset.after);
  var es = new EventSource(url);
  es.addEventListener("step", function (e) {
    var d = JSON.parse(e.data);
    var li = document.createElement("li");
    li.textContent = "seq " + d.seq + " · " + d.title + (d.detail ? " · " + d.detail : "");
    list.appendChild(li);
    box.hidden = false;
  });
  es.addEventListener("end", function () {
    es.close();
    // The session page by GET: never the form post that may have made this page.
    window.location.assign("/ui/sessions/" + encodeURIComponent(box.dataset.session));
  });
  // A form sent from this page leads to the page that shows its outcome: stop here.
  document.addEventListener("submit", function () { es.close(); });
}());
