// The attention chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchScores } from "../chapters/scores.js";
import { amongPieces, piece, power } from "./choices.js";
import { t } from "../i18n.js";

const attention = {
  chapter: "attention",
  // the first answer gives the translation; the question is about its middle word (punctuation
  // has nothing to look for)
  async measure(text, ctx, signal) {
    const first = await fetchScores(text, null, 0, 1, signal);
    const targets = first.target_tokens;
    const words = targets.map((token, i) => (/\p{L}/u.test(token) ? i : -1)).filter((i) => i >= 0);
    const row = words.length ? words[Math.floor(words.length / 2)] : Math.floor(targets.length / 2);
    return row === 0 ? first : fetchScores(text, first.model, row, 1, signal);
  },
  pose(answer) {
    if (answer.source_tokens.length < 2) return null;
    const { choices, right, close } = amongPieces(answer.source_tokens, answer.weights);
    const best = Number(right);
    return {
      prompt: t("attention.question.prompt", { model: answer.model, word: piece(answer.query_token), translation: answer.translation }),
      choices, right, close,
      measured: answer.weights[best],
      says: (id) => t("attention.question.says", {
        guess: choices[Number(id)].label, guessValue: power(answer.weights[Number(id)]),
        answer: choices[best].label, value: power(answer.weights[best]), word: piece(answer.query_token),
      }),
    };
  },
};

export default attention;
