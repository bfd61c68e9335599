/** Asked before an upload whose names already exist in the destination folder. */
import { Dialog } from '../../components/Dialog';
import { useApi } from '../../api/hooks';
import { runUpload, useConflicts } from './upload';
import './files.css';

export function ConflictDialog() {
  const api = useApi();
  const pending = useConflicts((s) => s.pending);
  const set = useConflicts((s) => s.set);
  if (!pending) return null;
  const { files, target, conflicting } = pending;
  const choose = (mode: 'rename' | 'overwrite') => {
    set(null);
    void runUpload(api, files, target, mode);
  };
  const one = conflicting.length === 1;
  return (
    <Dialog title={one ? `"${conflicting[0]}" already exists` : `${conflicting.length} files already exist`} onClose={() => set(null)} testId="conflict-dialog">
      <div className="dialog-body">
        <p>
          {one ? 'A file with this name' : 'Files with these names'} already {one ? 'exists' : 'exist'} in “{target.folderName}”.
        </p>
        {!one && (
          <ul className="conflict-list">
            {conflicting.slice(0, 8).map((n) => (
              <li key={n}>{n}</li>
            ))}
            {conflicting.length > 8 && <li>…and {conflicting.length - 8} more</li>}
          </ul>
        )}
        <p className="muted">“Keep both” saves the new {one ? 'file' : 'files'} as “name (1)”.</p>
      </div>
      <div className="dialog-actions">
        <button type="button" className="btn" onClick={() => set(null)}>
          Cancel
        </button>
        <button type="button" className="btn" onClick={() => choose('overwrite')} data-testid="conflict-overwrite">
          Overwrite
        </button>
        <button type="button" className="btn btn-primary" data-autofocus onClick={() => choose('rename')} data-testid="conflict-keep-both">
          Keep both
        </button>
      </div>
    </Dialog>
  );
}
