// A token of customer text, as ./tokens makes it and the rest of the offline model's language reads it — a shape of
// its own, so that the readers below ./tokens (./amounts) need not import the tokeniser that imports them.

export interface Token {
  /** As written (after spelling correction and canonical order numbers); with `space` it rebuilds the text. */
  text: string;
  /** Whitespace before the token. */
  space: string;
  /** Lowercase, contractions expanded ("n't" → "not"), shorthand and misspellings corrected. */
  norm: string;
  lemma: string;
  pos: string;
  /** word | number | punctuation | currency | email | tabCRLF | emoji | … (wink's token types). */
  type: string;
  /** Covered by a preceding negation ("I don't want a REFUND"), as wink's negation model marks it. */
  negated: boolean;
  /** Index of the sentence the token belongs to. */
  sentence: number;
  /** Canonical order number ("A-1002") when the token is one. */
  order?: string;
  /** Index into the text's amounts when the token is part of one ("$", "820"; "fifty", "bucks"). */
  amount?: number;
}
