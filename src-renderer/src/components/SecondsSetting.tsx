/**
 * A form row that sets a number of seconds (1–3600): the field shows the saved value until the
 * user types, and goes back to it once the new one is saved.
 */
import { useState, type FormEvent } from 'react';
import { toastError } from '../stores/ui';

export function SecondsSetting(props: {
  id: string;
  label: string;
  /** The saved value (undefined while loading). */
  seconds: number | undefined;
  /** Saves a valid value; a rejection keeps what was typed and is shown as an error. */
  save: (seconds: number) => Promise<unknown>;
  /** The title of the message that refuses an invalid value. */
  title: string;
  className: string;
  testId: string;
}) {
  const [text, setText] = useState<string | null>(null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const value = Number((text ?? '').trim());
    if (!Number.isInteger(value) || value < 1 || value > 3600) return toastError(props.title, 'Enter a whole number of seconds from 1 to 3600.');
    void props.save(value).then(
      () => setText(null),
      (err) => toastError('Could not save the setting', err),
    );
  };
  return (
    <form className={props.className} onSubmit={submit}>
      <label htmlFor={props.id}>{props.label}</label>
      <input
        id={props.id}
        className="input input-small input-number"
        inputMode="numeric"
        value={text ?? (props.seconds === undefined ? '' : String(props.seconds))}
        onChange={(e) => setText(e.target.value)}
        data-testid={props.testId}
      />
      <span>seconds</span>
      <button type="submit" className="btn btn-small" data-testid={`${props.testId.replace(/-seconds$/, '')}-save`}>
        Save
      </button>
    </form>
  );
}
