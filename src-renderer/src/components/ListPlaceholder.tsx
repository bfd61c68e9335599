import type { ReactNode } from 'react';

/**
 * What a list shows in place of rows: loading, the failure, or what an empty list says; null
 * when there are rows to show.
 */
export function listPlaceholder(props: { loading: boolean; error: string | null | undefined; empty: boolean; emptyTestId: string; whenEmpty: ReactNode }): ReactNode | null {
  if (props.loading) {
    return (
      <div className="list-state" data-testid="list-loading">
        <span className="spinner" aria-hidden="true" />
        Loading…
      </div>
    );
  }
  if (props.error) {
    return (
      <div className="list-state list-error" role="alert">
        {props.error}
      </div>
    );
  }
  if (props.empty) {
    return (
      <div className="list-state" data-testid={props.emptyTestId}>
        {props.whenEmpty}
      </div>
    );
  }
  return null;
}
