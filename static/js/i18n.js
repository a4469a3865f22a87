// The page's words in the reader's language. One catalogue per language (static/i18n/<lang>.json,
// one key per message), the same files the server renders the template from. A message is a string
// with {placeholders}, or, where a count decides the words, an object of plural forms keyed by the
// categories of Intl.PluralRules ("one", "other", ...), chosen by the `count` placeholder ("other"
// when there is none, as the server chooses: app/services/language.py). Numbers
// are written by the language's rules (Intl.NumberFormat): 0.83 in English is 0,83 in French. A
// message names another chapter by its slug, `{chapter:gradients}`, and reads as its number.
import { chapterNumber } from "./dom.js";

export const LANGUAGES = ["en", "fr"];

let current = "en";
const catalogues = new Map(); // lang -> {key: message}
const plurals = new Map(); // lang -> its Intl.PluralRules

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

/** Whether the catalogues have message `key` (a model's summary has one when the story names the model). */
export const has = (key) => (catalogues.get(current) || catalogues.get("en") || {})[key] !== undefined;

/** The page's language now ("en" or "fr"). */
export const language = () => current;

/** The message `key` in the page's language, its {placeholders} filled from `params`. */
export function t(key, params = {}) {
  const messages = catalogues.get(current) || {};
  let message = messages[key] ?? catalogues.get("en")?.[key];
  if (message === undefined) return key; // a missing key shows itself, and the catalogue test catches it
  if (typeof message === "object") {
    message = message[plural(params.count)] ?? message.other;
  }
  return message.replace(/\{(\w+)\}/g, (whole, name) => {
    const value = params[name];
    if (value === undefined) return whole;
    return typeof value === "number" ? number(value) : String(value);
  }).replace(/\{chapter:(\w+)\}/g, (whole, slug) => (chapterNumber(slug) ? number(chapterNumber(slug)) : whole));
}

/** The plural form for `count` in the page's language; "other" without a count, never 0's form. */
function plural(count) {
  if (count === undefined || count === null) return "other";
  if (!plurals.has(current)) plurals.set(current, new Intl.PluralRules(current));
  return plurals.get(current).select(Number(count));
}

const formats = new Map(); // "lang options" -> Intl.NumberFormat (making one costs more than using it)

/** A number by the language's rules (`options`: Intl.NumberFormat's). */
export function number(x, options = {}) {
  const id = `${current} ${JSON.stringify(options)}`;
  if (!formats.has(id)) formats.set(id, new Intl.NumberFormat(current, options));
  return formats.get(id).format(x);
}

const signs = new Map(); // lang -> its decimal sign

/**
 * A number JavaScript already wrote with "." (toFixed, toPrecision: they round the exact binary
 * value, so (1.005).toFixed(2) is "1.00", where Intl.NumberFormat, rounding the shortest decimal,
 * writes "1.01"), in the page's language: its decimal sign (0.83 -> 0,83).
 */
export function decimal(written) {
  if (!signs.has(current)) signs.set(current, number(1.5).replace(/\d/g, ""));
  const sign = signs.get(current);
  return sign === "." ? written : written.replace(".", sign);
}

const SUPERSCRIPT = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };

/**
 * The page's one way of writing a measured number: `digits` significant digits in the page's
 * language (0.83, 0,83); below `small` or from `large` on, in the catalogue's scientific form
 * ("number.scientific": 1.1×10⁻¹³, 1,1 × 10⁻¹³). `zeros` false drops the trailing zeros a
 * rounding leaves (0.5, not 0.500). Not finite or missing: "–".
 */
export function figure(x, { digits = 2, small = 1e-3, large = 1e4, zeros = true } = {}) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  const trim = (written) => (zeros ? written : String(Number(written)));
  if (x !== 0 && (Math.abs(x) < small || Math.abs(x) >= large)) {
    const [mantissa, exponent] = x.toExponential(digits - 1).split("e");
    const raised = [...String(Number(exponent))].map((c) => SUPERSCRIPT[c]).join("");
    return t("number.scientific", { mantissa: decimal(trim(mantissa)), exponent: raised });
  }
  // toFixed above 10^(digits-1): toPrecision would write 99.6 as "1.0e+2"
  return decimal(trim(Math.abs(x) >= 10 ** (digits - 1) ? x.toFixed(0) : x.toPrecision(digits)));
}

const lists = new Map(); // "lang options" -> Intl.ListFormat

/**
 * Words (or numbers already written) as one list in the page's language: "a, b, and c", « a, b et
 * c ». `options`: Intl.ListFormat's; {style: "narrow"} writes a sequence with commas only ("3, 1, 2").
 */
export function listOf(items, options = {}) {
  const id = `${current} ${JSON.stringify(options)}`;
  if (!lists.has(id)) lists.set(id, new Intl.ListFormat(current, { type: "conjunction", style: "long", ...options }));
  return lists.get(id).format(items.map(String));
}

/** The page's words as the server wrote them (<html lang>), else English. */
export const pageLanguage = () => (LANGUAGES.includes(document.documentElement.lang) ? document.documentElement.lang : "en");

const params = (node) => (node.dataset.i18nParams ? JSON.parse(node.dataset.i18nParams) : {});

/**
 * Mark `node` as showing message `key` (with `values`) and write it: translatePage rewrites it in
 * another language. `attribute`: write it there instead of the text.
 */
export function label(node, key, values = {}, attribute = null) {
  if (attribute) {
    const pairs = (node.dataset.i18nAttr || "").split(";").filter((p) => p && !p.startsWith(`${attribute}:`));
    node.dataset.i18nAttr = [...pairs, `${attribute}:${key}`].join(";");
    node.setAttribute(attribute, t(key, values));
  } else {
    node.dataset.i18n = key;
    node.textContent = t(key, values);
  }
  if (Object.keys(values).length) node.dataset.i18nParams = JSON.stringify(values);
  else delete node.dataset.i18nParams;
  return node;
}

/** Undo `label(node, key, values, attribute)`: the attribute is gone and stays gone. */
export function unlabel(node, attribute) {
  const pairs = (node.dataset.i18nAttr || "").split(";").filter((p) => p && !p.startsWith(`${attribute}:`));
  if (pairs.length) node.dataset.i18nAttr = pairs.join(";");
  else delete node.dataset.i18nAttr;
  node.removeAttribute(attribute);
}

/**
 * Rewrite every marked word below `root` in the page's language: data-i18n (text), data-i18n-html
 * (the catalogue's own markup: a story's sentence around its data-fact slots, which the views fill
 * again when they redraw), data-i18n-attr ("attribute:key;..."), with data-i18n-params.
 */
export function translatePage(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n, params(node));
  for (const node of root.querySelectorAll("[data-i18n-html]")) node.innerHTML = t(node.dataset.i18nHtml, params(node));
  for (const node of root.querySelectorAll("[data-i18n-attr]")) {
    for (const pair of node.dataset.i18nAttr.split(";").filter(Boolean)) {
      const [attribute, key] = pair.split(":");
      node.setAttribute(attribute, t(key, params(node)));
    }
  }
  document.documentElement.lang = current;
  document.documentElement.style.setProperty("--measuring", JSON.stringify(t("page.measuring")));
}
