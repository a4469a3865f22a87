// The switch between English and French at the top right. It changes the page's language in place:
// the template's words are rewritten from the catalogue and every view redraws its last answer, so
// the sentence, the chapter and every control stay as they are and no model is asked again.
import { $ } from "./dom.js";
import { sayAgain } from "./composer.js";
import { relabelEmbeds } from "./embed.js";
import { language, LANGUAGES, translatePage, useLanguage } from "./i18n.js";

const A_YEAR_S = 365 * 24 * 3600;

/** Show the page in `lang`, in place; remembered for the next visit (the server reads the cookie). */
async function switchLanguage(lang, state) {
  if (!LANGUAGES.includes(lang)) return;
  document.cookie = `lang=${lang}; Path=/; Max-Age=${A_YEAR_S}; SameSite=Lax`;
  if (lang === language()) return;
  await useLanguage(lang);
  translatePage();
  state.questions?.relabel();
  relabelEmbeds();
  for (const link of document.querySelectorAll(".languages a[data-lang]")) {
    if (link.dataset.lang === lang) link.setAttribute("aria-current", "true");
    else link.removeAttribute("aria-current");
  }
  sayAgain();
  if (!state.page) return;
  state.page.set({ lang });
  state.composer.showCount();
  $("numerics").textContent = state.catalog.numericsLine;
  await state.lab.redraw();
  document.documentElement.dataset.switched = lang; // for tests: every view redrawn in `lang`
  window.dispatchEvent(new CustomEvent("lab:language", { detail: { lang } }));
}

/** Wire the language links; `state` (the page's lab, and once loaded its catalog, URL state,
 * composer and questions) is read at each switch. */
export function languageSwitch(state) {
  for (const link of document.querySelectorAll(".languages a[data-lang]")) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      switchLanguage(link.dataset.lang, state).catch((error) => console.error(error));
    });
  }
}
