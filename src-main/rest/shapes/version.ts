/** The API version a wire shape is rendered for (the first path segment). */
export type Version = 'v0' | 'v1' | 'v2';
