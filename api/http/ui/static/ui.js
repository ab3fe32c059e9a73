// Roving UI: small progressive touches; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // a select in a GET filter form applies itself
  document.querySelectorAll("form.filters select").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
  // a destructive form asks first (without this script it simply posts)
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
  // show times in the reader's own zone, keeping UTC in the tooltip
  document.querySelectorAll("time[datetime]").forEach((el) => {
    const when = new Date(el.getAttribute("datetime"));
    if (!isNaN(when)) { el.title = el.textContent; el.textContent = when.toLocaleString(); }
  });
});
