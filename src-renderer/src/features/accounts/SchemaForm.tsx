/**
 * Form fields generated from a connector's JSON Schema (zod's toJSONSchema of its options).
 * Each property's `title`, `description`, `placeholder`, `default`, `enum` and `secret` (or
 * `format: password`) metadata choose the control; `required` marks mandatory fields.
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
    else if (p.multiline || p.format === 'textarea') kind = 'textarea';
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

/** Reads the form back into connector options; blank fields are left out so defaults apply. */
export function readOptions(form: HTMLFormElement, fields: FieldSpec[]): Record<string, unknown> {
  const data = new FormData(form);
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (f.kind === 'boolean') {
      out[f.key] = data.get(f.key) === 'on';
      continue;
    }
    const v = String(data.get(f.key) ?? '');
    if (v === '') continue;
    if (f.kind === 'number') out[f.key] = Number(v);
    else if (f.kind === 'json') {
      try {
        out[f.key] = JSON.parse(v);
      } catch {
        throw new Error(`${f.label}: not valid JSON.`);
      }
    } else out[f.key] = v;
  }
  return out;
}

export function SchemaFields({ fields }: { fields: FieldSpec[] }) {
  return (
    <>
      {fields.map((f) => {
        const id = `field-${f.key}`;
        const help = f.help ? `${id}-help` : undefined;
        const common = { id, name: f.key, 'aria-describedby': help, 'data-testid': id, required: f.required };
        let control;
        if (f.kind === 'boolean') {
          control = <input type="checkbox" {...common} required={false} defaultChecked={f.defaultValue === true} />;
        } else if (f.kind === 'select') {
          control = (
            <select className="input" {...common} defaultValue={f.defaultValue === undefined ? undefined : String(f.defaultValue)}>
              {!f.required && <option value="">—</option>}
              {f.options!.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          );
        } else if (f.kind === 'textarea' || f.kind === 'json') {
          control = <textarea className="input" rows={4} {...common} placeholder={f.placeholder} defaultValue={f.defaultValue === undefined ? undefined : f.kind === 'json' ? JSON.stringify(f.defaultValue) : String(f.defaultValue)} />;
        } else {
          control = (
            <input
              className="input"
              type={f.kind === 'password' ? 'password' : f.kind === 'number' ? 'number' : 'text'}
              autoComplete={f.kind === 'password' ? 'new-password' : 'off'}
              spellCheck={false}
              min={f.min}
              max={f.max}
              placeholder={f.placeholder ?? (f.defaultValue !== undefined && f.kind !== 'password' ? String(f.defaultValue) : undefined)}
              {...common}
            />
          );
        }
        return (
          <div key={f.key} className={f.kind === 'boolean' ? 'field field-check' : 'field'}>
            <label htmlFor={id} className="field-label">
              {f.label}
              {f.required && (
                <span className="req" aria-hidden="true">
                  {' '}
                  *
                </span>
              )}
            </label>
            {control}
            {f.help && (
              <span id={help} className="field-help">
                {f.help}
              </span>
            )}
          </div>
        );
      })}
    </>
  );
}
