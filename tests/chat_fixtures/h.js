// One helper for the fixture pages: an element from a line of HTML.
window.h = (html) => {
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  return template.content.firstElementChild;
};
