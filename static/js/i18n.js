// The page's words in the reader's language. One catalogue per language (static/i18n/<lang>.json,
// one key per message), the same files the server renders the template from. A message is a string
// with {placeholders}, or, where a count decides the words, an object of plural forms keyed by the
// categories of Intl.PluralRules ("one", "other", ...), chosen by the `count` placeholder. Numbers
// are written by the language's rules (Intl.NumberFormat): 0.83 in English is 0,83 in French.
export const LANGUAGES = ["en", "fr"];

let current = "en";
const catalogues = new Map(); // lang -> {key: message}

/** Fetch `lang`'s catalogue once and make it the page's language. */
export async function useLanguage(lang) {
  const code = LANGUAGES.includes(lang) ? lang : "en";
  if (!catalogues.has(code)) {
    const response = await fetch(`/static/i18n/${code}.json`);
    if (!response.ok) throw new Error(`no catalogue for ${code} (HTTP ${response.status})`);
    catalogues.set(code, await response.json());
  }
  current = code;
  return code;
}

/** The page's language now ("en" or "fr"). */
export const language = () => current;

/** The message `key` in the page's language, its {placeholders} filled from `params`. */
export function t(key, params = {}) {
  const messages = catalogues.get(current) || {};
  let message = messages[key] ?? catalogues.get("en")?.[key];
  if (message === undefined) return key; // a missing key shows itself, and the catalogue test catches it
  if (typeof message === "object") {
    const form = new Intl.PluralRules(current).select(Number(params.count));
    message = message[form] ?? message.other;
  }
  return message.replace(/\{(\w+)\}/g, (whole, name) => {
    const value = params[name];
    if (value === undefined) return whole;
    return typeof value === "number" ? number(value) : String(value);
  });
}

/** A number by the language's rules (`options`: Intl.NumberFormat's). */
export const number = (x, options = {}) => new Intl.NumberFormat(current, options).format(x);
