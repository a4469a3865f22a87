// What chapter views share, by name: one view sets a value, the others read it or are told of each
// new one. Chapters never import each other; they meet here (the bottleneck chapter's card choice
// drives the heads chapter's model, the heads chapter's selection its lab, every chapter's headline
// the recap, ...). Names in use: text (the latest text every view was asked about), model (the
// selected card), heads (the heads chapter's model, selection and its answer), hover (the token
// hovered in the heads chapter), row (the output word picked in the attention chapter), lag (the
// gradients chapter's long-lag results and choice), live (the bottleneck chapter's live set-up),
// headline:<slug> (that chapter's line in the recap).

const values = new Map();
const watchers = new Map(); // name -> [watcher]

/** The value last set under `name` (undefined before any). */
export const get = (name) => values.get(name);

/** Set `name` and tell its watchers, even of an equal value: a headline measured again is news. */
export function set(name, value) {
  values.set(name, value);
  for (const watcher of watchers.get(name) || []) watcher(value);
}

/** Call `watcher(value)` at every set of `name`, and now if it has a value already. */
export function watch(name, watcher) {
  if (!watchers.has(name)) watchers.set(name, []);
  watchers.get(name).push(watcher);
  if (values.has(name)) watcher(values.get(name));
}

/** Chapter `chapter`'s line in the recap; `lasting`: true when it holds for any text (a timing of this server). */
export const headline = (chapter, text, lasting = false) => set(`headline:${chapter}`, { text, lasting });
