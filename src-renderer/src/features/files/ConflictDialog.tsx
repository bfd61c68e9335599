/**
 * Asked before anything writes over a taken name: an upload, and a rename, move or copy
 * (features/files/actions.ts). The same three answers everywhere: Keep both ("name (1)"),
 * Replace, Skip; for a selection, "apply to all" answers the rest the same way.
 */
import { useState } from 'react';
import { Dialog } from '../../components/Dialog';
import { Name, named } from '../../components/Name';
import { useApi } from '../../api/hooks';
import { useItemConflict, type ConflictChoice } from './actions';
import { runUpload, useConflicts } from './upload';
import './files.css';

export function ConflictDialog() {
  const item = useItemConflict((s) => s.pending);
  return item ? <ItemConflictDialog key={`${item.verb}:${item.name}:${item.remaining}`} /> : <UploadConflictDialog />;
}

function Choices(props: { onChoose(choice: ConflictChoice): void; skipLabel?: string }) {
  return (
    <div className="dialog-actions">
      <button type="button" className="btn" onClick={() => props.onChoose('skip')} data-testid="conflict-skip">
        {props.skipLabel ?? 'Skip'}
      </button>
      <button type="button" className="btn btn-danger" onClick={() => props.onChoose('overwrite')} data-testid="conflict-overwrite">
        Replace
      </button>
      <button type="button" className="btn btn-primary" data-autofocus onClick={() => props.onChoose('rename')} data-testid="conflict-keep-both">
        Keep both
      </button>
    </div>
  );
}

function ItemConflictDialog() {
  const pending = useItemConflict((s) => s.pending)!;
  const [all, setAll] = useState(false);
  const verb = { rename: 'Renaming', move: 'Moving', copy: 'Copying' }[pending.verb];
  return (
    <Dialog title={named`“${pending.name}” already exists`} onClose={() => pending.answer('skip', false)} testId="conflict-dialog">
      <div className="dialog-body">
        <p>
          {verb} into “<Name value={pending.folderName} />”: an item with this name is already there.
        </p>
        <p className="muted">“Keep both” saves it as “name (1)”; “Replace” puts it in place of the one that is there.</p>
        {pending.remaining > 0 && (
          <label className="check">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} data-testid="conflict-all" /> Do this for the other {pending.remaining}{' '}
            {pending.remaining === 1 ? 'item' : 'items'} too
          </label>
        )}
      </div>
      <Choices onChoose={(choice) => pending.answer(choice, all)} />
    </Dialog>
  );
}

function UploadConflictDialog() {
  const api = useApi();
  const pending = useConflicts((s) => s.pending);
  const set = useConflicts((s) => s.set);
  if (!pending) return null;
  const { files, target, conflicting } = pending;
  const choose = (mode: ConflictChoice) => {
    set(null);
    if (mode !== 'skip') return void runUpload(api, files, target, mode);
    // Skip: only the files whose names are free go up.
    const rest = files.filter((f) => !conflicting.includes(f.name));
    if (rest.length) void runUpload(api, rest, target, 'rename');
  };
  const one = conflicting.length === 1;
  return (
    <Dialog title={one ? named`"${conflicting[0]}" already exists` : `${conflicting.length} files already exist`} onClose={() => set(null)} testId="conflict-dialog">
      <div className="dialog-body">
        <p>
          {one ? 'A file with this name' : 'Files with these names'} already {one ? 'exists' : 'exist'} in “<Name value={target.folderName} />”.
        </p>
        {!one && (
          <ul className="conflict-list">
            {conflicting.slice(0, 8).map((n) => (
              <li key={n}>
                <Name value={n} />
              </li>
            ))}
            {conflicting.length > 8 && <li>…and {conflicting.length - 8} more</li>}
          </ul>
        )}
        <p className="muted">“Keep both” saves the new {one ? 'file' : 'files'} as “name (1)”; “Skip” uploads only the others.</p>
      </div>
      <Choices onChoose={choose} />
    </Dialog>
  );
}
