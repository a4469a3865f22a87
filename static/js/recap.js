// Chapter 11's registry of headline facts: each chapter's view states its one number here as it
// measures it (on the typed sentence, or from the shipped evaluation), and the recap shows it.

/** Chapter `chapter`'s headline is now `text`. */
export function headline(chapter, text) {
  const node = document.querySelector(`[data-recap="${chapter}"]`);
  if (node) node.textContent = text;
}
