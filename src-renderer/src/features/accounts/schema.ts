/**
 * Form fields from a connector's JSON Schema (zod's toJSONSchema of its options). Each
 * property's `title`, `description`, `placeholder`, `default`, `enum` and `secret` (or
 * `format: password`) metadata choose the control; `required` marks mandatory fields.
 * Pure (no DOM), so it is tested against every registered connector.
 */
export interface JsonSchemaProp {
  type?: string | string[];
  title?: string;
  description?: string;
  placeholder?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  secret?: boolean;
  writeOnly?: boolean;
  multiline?: boolean;
  anyOf?: JsonSchemaProp[];
  oneOf?: JsonSchemaProp[];
  minimum?: number;
  maximum?: number;
}

export interface FieldSpec {
  key: string;
  label: string;
  help?: string;
  placeholder?: string;
  kind: 'text' | 'password' | 'number' | 'boolean' | 'select' | 'textarea' | 'json';
  options?: string[];
  required: boolean;
  defaultValue?: unknown;
  min?: number;
  max?: number;
}

/** Collapses `anyOf: [X, null]` (optional/nullable fields) to X. */
function concrete(p: JsonSchemaProp): JsonSchemaProp {
  const alt = p.anyOf ?? p.oneOf;
  if (!alt) return p;
  const enums = alt.filter((a) => a.const !== undefined).map((a) => a.const);
  if (enums.length === alt.length) return { ...p, enum: enums, type: 'string' };
  const first = alt.find((a) => a.type !== 'null') ?? alt[0];
  return { ...first, ...p, anyOf: undefined, oneOf: undefined, type: first.type };
}

function humanize(key: string): string {
  const spaced = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ');
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

export function fieldsOf(schema: Record<string, unknown>): FieldSpec[] {
  const props = (schema.properties ?? {}) as Record<string, JsonSchemaProp>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([key, raw]) => {
    const p = concrete(raw);
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
    let kind: FieldSpec['kind'] = 'text';
    if (p.enum) kind = 'select';
    else if (type === 'boolean') kind = 'boolean';
    else if (type === 'number' || type === 'integer') kind = 'number';
    else if (type === 'object' || type === 'array') kind = 'json';
    else if (p.secret || p.writeOnly || p.format === 'password') kind = 'password';
    else if (p.multiline || p.format === 'textarea' || /\bPEM\b/.test(`${p.title ?? ''} ${p.description ?? ''}`)) kind = 'textarea';
    return {
      key,
      label: p.title ?? humanize(key),
      help: p.description,
      placeholder: p.placeholder,
      kind,
      options: p.enum?.map(String),
      // A field with a default is never required of the user.
      required: required.has(key) && p.default === undefined,
      defaultValue: p.default,
      min: p.minimum,
      max: p.maximum,
    };
  });
}
