/** The "connect account" form controls, generated from the connector's schema (schema.ts). */
import type { FieldSpec } from './schema';

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

/**
 * Puts values into the form's fields (the inverse of readOptions): an account's saved settings
 * in Reconnect, or settings found for an address (mail autodiscovery) in the connect form.
 */
export function fillForm(form: HTMLFormElement, fields: FieldSpec[], values: Record<string, unknown>): void {
  for (const f of fields) {
    const input = form.elements.namedItem(f.key) as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | null;
    const value = values[f.key];
    if (!input || value === undefined || value === null) continue;
    if (input instanceof HTMLInputElement && input.type === 'checkbox') input.checked = value === true;
    else input.value = typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
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
