// The submit page: a loaded file fills the editor, and the text is checked by POST /v4/workflows:validate (through
// the UI's session) a moment after each change, so problems show with their fields before anything is submitted.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("submit-form");
  const text = document.getElementById("definition");
  const state = document.getElementById("validity");
  const upload = document.getElementById("upload");
  const name = document.getElementById("name");
  if (!form || !text) return;
  let timer = null;
  let asked = 0;
  const show = (found) => {
    let list = document.getElementById("problems");
    if (!list) {
      list = document.createElement("ul");
      list.id = "problems";
      state.after(list);
    }
    list.className = "problems";
    list.replaceChildren(...["errors", "warnings"].flatMap((kind) => found[kind].map((p) => {
      const item = document.createElement("li");
      item.className = kind.slice(0, -1);
      item.textContent = (p.path ? p.path + ": " : "") + p.message;  // text, never markup
      return item;
    })));
    state.textContent = found.valid
      ? (found.warnings.length ? "Valid, with warnings." : "Valid.")
      : `${found.errors.length} error${found.errors.length === 1 ? "" : "s"}: not submittable yet.`;
    state.dataset.valid = String(found.valid);
  };
  const check = () => {
    const mine = ++asked;
    state.textContent = "Checking…";
    const body = new URLSearchParams({ csrf: form.elements.csrf.value, definition: text.value });
    fetch("/ui/submit/validate", { method: "POST", body, credentials: "same-origin" })
      .then((answer) => (answer.ok ? answer.json() : Promise.reject(answer.status)))
      .then((found) => { if (mine === asked) show(found); })
      .catch((status) => { if (mine === asked) state.textContent = `Could not check (${status}).`; });
  };
  text.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(check, 300); });
  upload.addEventListener("change", () => {
    const file = upload.files[0];
    if (!file) return;
    file.text().then((content) => {
      text.value = content;
      if (!name.value) name.value = file.name.replace(/\.(ya?ml|txt)$/i, "");
      check();
    });
  });
  check();
});
