// Upload page: drag and drop onto the file field, and send the form with a progress bar.
// Without this script the form still works as a plain multipart POST.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form) { return; }
  var zone = document.getElementById("dropzone");
  var input = form.querySelector('input[type="file"]');
  var bar = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var errors = document.getElementById("upload-errors");
  var button = form.querySelector('button[type="submit"]');

  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (event) {
    if (event.dataTransfer && event.dataTransfer.files.length) {
      input.files = event.dataTransfer.files;
      status.textContent = "Ready: " + input.files[0].name;
    }
  });

  // The chosen split's policy and the chosen team's remaining quota.
  var splitSelect = form.querySelector('select[name="split"]');
  var teamSelect = form.querySelector('select[name="team"]');
  function showPolicy() {
    document.querySelectorAll("#split-policies .policy-box").forEach(function (box) {
      box.hidden = !splitSelect || box.getAttribute("data-split") !== splitSelect.value;
      box.querySelectorAll(".quota-left").forEach(function (line) {
        line.hidden = !teamSelect || line.getAttribute("data-team") !== teamSelect.value;
      });
    });
  }
  if (splitSelect) { splitSelect.addEventListener("change", showPolicy); }
  if (teamSelect) { teamSelect.addEventListener("change", showPolicy); }
  showPolicy();

  function clearFieldErrors() {
    form.querySelectorAll(".field-error.from-server").forEach(function (node) { node.remove(); });
    form.querySelectorAll(".field.has-error").forEach(function (node) { node.classList.remove("has-error"); });
  }

  // The message beside the field it is about (the server names it), as the page does without script.
  function markField(name, message) {
    var input = name && form.querySelector('[name="' + name + '"]');
    var box = input && input.closest(".field");
    if (!box) { return; }
    box.classList.add("has-error");
    var note = document.createElement("small");
    note.className = "field-error from-server";
    note.textContent = message;
    box.appendChild(note);
  }

  // A problem's text, as a link to the field it is about when that field is on the page (ids are the names).
  function linkTo(name, text) {
    if (!name || !document.getElementById(name)) { return document.createTextNode(text); }
    var link = document.createElement("a");
    link.href = "#" + name;
    link.textContent = text;
    return link;
  }

  // The summary is announced (role="alert"), brought into view and focused, wherever the person had scrolled.
  function reveal() {
    errors.scrollIntoView({block: "start"});
    errors.focus({preventScroll: true});
  }

  function showErrors(message, details, field) {
    clearFieldErrors();
    if (field) { markField(field, message); }
    (details || []).forEach(function (detail) { if (detail.field) { markField(detail.field, detail.message); } });
    errors.textContent = "";
    var head = document.createElement("p");
    var strong = document.createElement("strong");
    strong.appendChild(linkTo(field, message));
    head.appendChild(strong);
    errors.appendChild(head);
    if (details && details.length) {
      var list = document.createElement("ul");
      list.className = "problems";
      details.forEach(function (detail) {
        var item = document.createElement("li");
        // A line of the file has no field of its own: it is about the field the whole refusal names.
        item.appendChild(linkTo(detail.field || field, detail.message));
        list.appendChild(item);
      });
      errors.appendChild(list);
    }
    errors.hidden = false;
    reveal();
  }

  // A link of the summary moves the focus into its field, not only the view (a fragment alone does not).
  errors.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest('a[href^="#"]');
    var target = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!target) { return; }
    event.preventDefault();
    var box = target.closest(".field") || target;
    box.scrollIntoView({block: "start"});
    target.focus({preventScroll: true});
  });

  // The page the server sent back after a refused upload (without the script's own upload).
  if (!errors.hidden) { reveal(); }

  form.addEventListener("submit", function (event) {
    if (!window.FormData || !window.XMLHttpRequest) { return; }
    event.preventDefault();
    errors.hidden = true;
    var request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.setRequestHeader("X-Requested-With", "fetch");
    request.setRequestHeader("Accept", "application/json");
    bar.hidden = false;
    bar.value = 0;
    button.disabled = true;
    status.textContent = "Uploading…";
    request.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) { bar.value = Math.round((100 * e.loaded) / e.total); }
    });
    request.upload.addEventListener("load", function () {
      bar.value = 100;
      status.textContent = "Uploaded; validating and scoring…";
    });
    request.addEventListener("load", function () {
      var body = null;
      try { body = JSON.parse(request.responseText); } catch (ignored) { body = null; }
      if (request.status === 201 && body && body.redirect) {
        status.textContent = "Scored.";
        window.location.assign(body.redirect);
        return;
      }
      button.disabled = false;
      bar.hidden = true;
      status.textContent = "";
      // A body over the size limit is refused before the page's code runs: it names no field, but it is the file.
      if (body && body.error) { showErrors(body.error, body.details, body.field || (request.status === 413 ? "file" : null)); }
      else { showErrors("The upload failed (HTTP " + request.status + ")."); }
    });
    request.addEventListener("error", function () {
      button.disabled = false;
      bar.hidden = true;
      status.textContent = "";
      showErrors("The connection failed; please try again.");
    });
    request.send(new FormData(form));
  });
})();
