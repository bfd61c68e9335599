/**
 * A backend's date as an entry holds it: null when it is not one. SDKs turn a malformed date
 * header or XML field into an Invalid Date without a word, and every `toISOString()` on it
 * throws (the API answer, the listing cache).
 */
export const knownDate = (d: Date | null | undefined): Date | null => (d && !Number.isNaN(d.getTime()) ? d : null);
