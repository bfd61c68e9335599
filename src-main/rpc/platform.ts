/**
 * Electron-only abilities (native dialogs, reading files the user dropped from the desktop)
 * reach the handlers as a `Platform`; in headless mode they are absent.
 */
export interface Platform {
  mode: 'electron' | 'headless';
  /** Asks the user where to save a file; null when they cancel. */
  chooseSavePath?(suggestedName: string): Promise<string | null>;
  /** Asks the user for a folder to save several files into; null when they cancel. */
  chooseFolder?(): Promise<string | null>;
  /** Base URL of the localhost REST API, when it runs. */
  apiUrl?: string | null;
  version: string;
}
