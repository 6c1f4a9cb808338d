// turnlog inspector: a session page follows its session live. Each new event of the
// log shows as a line (text only), a model's answer shows piece by piece as it
// arrives, and when a turn ends or waits for people the session page is loaded again
// to show it whole. Without script the page works the same, reloaded by hand.
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || !window.EventSource) { return; }
  var list = box.querySelector("ol");
  var drafts = {}; // turn + path → the line an answer arrives in
  var url = "/ui/sessions/" + encodeURIComponent(box.dataset.session) + "/live?after=" + encodeURIComponent(box.dataset.after);
  var es = new EventSource(url);
  es.addEventListener("open", function () { box.dataset.connected = "true"; });
  es.addEventListener("step", function (e) {
    var d = JSON.parse(e.data);
    var li = document.createElement("li");
    li.textContent = "seq " + d.seq + " · " + d.title + (d.detail ? " · " + d.detail : "");
    list.appendChild(li);
    if (d.kind === "ModelCalled") {
      var draft = drafts[d.turn + " " + d.path];
      if (draft) { // the answer is recorded: it stays as it came
        draft.line.classList.remove("arriving");
        delete drafts[d.turn + " " + d.path];
      }
    }
    box.hidden = false;
  });
  es.addEventListener("text", function (e) {
    var d = JSON.parse(e.data);
    var key = d.turn + " " + d.path;
    var draft = drafts[key];
    if (!draft || d.index === 0) {
      var li = document.createElement("li");
      li.className = "answer arriving";
      var label = document.createElement("span");
      label.textContent = "answer: ";
      var body = document.createElement("span");
      body.className = "text";
      li.appendChild(label);
      li.appendChild(body);
      list.appendChild(li);
      draft = drafts[key] = { line: li, body: body, next: 0 };
    }
    if (d.index !== draft.next) { // pieces sent before this page listened, or lost
      draft.body.textContent += "… ";
    }
    draft.body.textContent += d.text;
    draft.next = d.index + 1;
    box.hidden = false;
  });
  es.addEventListener("end", function (e) {
    // A turn that ended (or waited) before this page was made is on it already.
    if (JSON.parse(e.data).seq <= Number(box.dataset.seen)) { return; }
    es.close();
    // The session page by GET: never the form post that may have made this page.
    window.location.assign("/ui/sessions/" + encodeURIComponent(box.dataset.session));
  });
  es.addEventListener("signed-out", function () {
    es.close();
    window.location.assign("/ui/signin?next=" + encodeURIComponent(window.location.pathname));
  });
  // A form sent from this page leads to the page that shows its outcome: stop here.
  // (A form the page's own check kept from being sent changes nothing.)
  document.addEventListener("submit", function (e) { if (!e.defaultPrevented) { es.close(); } });
}());
