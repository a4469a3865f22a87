// The DOM helpers every view uses. Text goes in as text (textContent), never as HTML.

export const $ = (id) => document.getElementById(id);

/** Chapter `slug`'s own section: the root a chapter's views are built on. */
export const chapterRoot = (slug) => document.querySelector(`section[data-chapter="${slug}"]`);

/** Chapter `slug`'s number, its place in the story as the server lists the chapters (<body data-chapters>); 0: none. */
export const chapterNumber = (slug) => (document.body?.dataset.chapters || "").split(" ").indexOf(slug) + 1;

/**
 * A lookup of a view's parts by id that searches `root` only, so a view owns its section: a part
 * that is not inside it throws at once instead of quietly reaching into another chapter.
 */
export function partsOf(root) {
  return (id) => {
    const node = root.querySelector(`#${CSS.escape(id)}`);
    if (!node) throw new Error(`#${id} is not inside #${root.id}`);
    return node;
  };
}

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
