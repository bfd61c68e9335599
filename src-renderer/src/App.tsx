/** The window: header, accounts sidebar, file browser, transfers panel, dialogs and toasts. */
import { useEffect, useState } from 'react';
import { useAccounts, useConnectors, useServerEvents } from './api/hooks';
import { ActivityIcon, LogoIcon, SettingsIcon } from './components/Icons';
import { PaneSplitter } from './components/PaneSplitter';
import { Name } from './components/Name';
import { Toasts } from './components/Toasts';
import { AccountProblem } from './features/accounts/AccountProblem';
import { Sidebar } from './features/accounts/Sidebar';
import { ConflictDialog } from './features/files/ConflictDialog';
import { ActivityDashboard } from './features/activity/Dashboard';
import { SettingsDialog } from './features/settings/SettingsDialog';
import { SyncView } from './features/sync/SyncView';
import { FileBrowser } from './features/files/FileBrowser';
import { Mailbox } from './features/mailbox/Mailbox';
import { useUnreadTitle } from './features/mailbox/unread';
import { TransferNotices } from './features/transfers/notices';
import { TransfersButton, TransfersPanel } from './features/transfers/TransfersPanel';
import { followAddress, onHistory, startNavigation, useNav, useUi } from './stores/ui';
import { usePanes } from './stores/panes';

export function App() {
  useServerEvents();
  useUnreadTitle();
  const accounts = useAccounts();
  const current = useUi((s) => s.account);
  const connectors = useConnectors();
  const account = accounts.data?.find((a) => a.id === current) ?? null;
  const kindOf = (service: string) => connectors.data?.find((c) => c.id === service)?.kind;
  const view = useUi((s) => s.view);
  const [settingsOpen, setSettingsOpen] = useState(false);
  const nav = useNav();
  const sideWidth = usePanes((s) => s.width.accounts);
  const sideHidden = usePanes((s) => s.collapsed.accounts);

  // The address is the place: Back/Forward, a reload and a pasted link land where they point.
  useEffect(() => {
    startNavigation();
    const pop = (e: PopStateEvent) => onHistory(e.state);
    // Alt+←/→ as in a browser, also in the desktop app, which has no browser keys.
    const keys = (e: KeyboardEvent) => {
      if (!e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      // In a text field Alt/Option+arrows move the caret by words (macOS): leave them there.
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
      if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
        e.preventDefault();
        if (e.key === 'ArrowLeft') window.history.back();
        else window.history.forward();
      }
    };
    window.addEventListener('popstate', pop);
    window.addEventListener('keydown', keys);
    return () => {
      window.removeEventListener('popstate', pop);
      window.removeEventListener('keydown', keys);
    };
  }, []);
  const browsable = account && account.active && kindOf(account.service) === 'storage';
  const mailbox = account && account.active && kindOf(account.service) === 'mail';

  // Start on the default account (the first-run local folder), else the first usable one; also
  // when the open account is gone (removed here or elsewhere).
  useEffect(() => {
    if (!accounts.data || (current !== null && accounts.data.some((a) => a.id === current))) return;
    if (!connectors.data) return;
    // A link or a reload names the place; an account removed since falls back to the default.
    if (followAddress((id) => accounts.data.some((a) => a.id === id)) && useUi.getState().account !== null) return;
    const usable = accounts.data.filter((a) => a.active && kindOf(a.service) === 'storage');
    const first = usable.find((a) => a.isDefault) ?? usable[0];
    if (!first) return;
    // The dashboard opened from the address stays open; the account is where it returns to.
    if (useUi.getState().view === 'activity') useUi.setState({ account: first.id, folder: 'root', message: null });
    else useUi.getState().open(first.id);
  }, [accounts.data, connectors.data, current]);

  // A file dropped outside any drop target must not make the page navigate to it.
  useEffect(() => {
    const stop = (e: DragEvent) => {
      if (!e.defaultPrevented) e.preventDefault();
    };
    window.addEventListener('dragover', stop);
    window.addEventListener('drop', stop);
    return () => {
      window.removeEventListener('dragover', stop);
      window.removeEventListener('drop', stop);
    };
  }, []);

  return (
    <div className="app">
      <header className="topbar">
        <div className="topbar-nav">
          <button
            type="button"
            className="btn btn-ghost"
            aria-label={sideHidden ? 'Show the accounts pane' : 'Hide the accounts pane'}
            aria-expanded={!sideHidden}
            aria-controls="accounts-pane"
            onClick={() => usePanes.getState().collapse('accounts', !sideHidden)}
            data-testid="pane-toggle"
          >
            ☰
          </button>
          <button type="button" className="btn btn-ghost" aria-label="Back (Alt+←)" title="Back (Alt+←)" disabled={nav.index <= 0} onClick={() => window.history.back()} data-testid="nav-back">
            ←
          </button>
          <button type="button" className="btn btn-ghost" aria-label="Forward (Alt+→)" title="Forward (Alt+→)" disabled={nav.index >= nav.last} onClick={() => window.history.forward()} data-testid="nav-forward">
            →
          </button>
          <div className="brand">
            <LogoIcon />
            <span>Tributary</span>
          </div>
        </div>
        <div className="topbar-actions">
          <button
            type="button"
            className={`btn btn-ghost${view === 'activity' ? ' pressed' : ''}`}
            aria-pressed={view === 'activity'}
            onClick={() => useUi.getState().setView(view === 'activity' ? 'account' : 'activity')}
            data-testid="activity-toggle"
          >
            <ActivityIcon /> Activity
          </button>
          <button
            type="button"
            className={`btn btn-ghost${view === 'sync' ? ' pressed' : ''}`}
            aria-pressed={view === 'sync'}
            onClick={() => useUi.getState().setView(view === 'sync' ? 'account' : 'sync')}
            data-testid="sync-toggle"
          >
            Sync
          </button>
          <TransfersButton />
          <button type="button" className="btn btn-ghost" onClick={() => setSettingsOpen(true)} aria-label="Settings" data-testid="settings-open">
            <SettingsIcon />
          </button>
        </div>
      </header>
      {settingsOpen && <SettingsDialog onClose={() => setSettingsOpen(false)} />}
      <div className="workspace">
        {!sideHidden && (
          <>
            <div id="accounts-pane" className="pane-side" style={{ width: sideWidth }} data-testid="accounts-pane">
              <Sidebar />
            </div>
            <PaneSplitter pane="accounts" label="Resize the accounts pane" controls="accounts-pane" testId="pane-splitter" />
          </>
        )}
        <main className="content">
          {view === 'activity' ? (
            <ActivityDashboard />
          ) : view === 'sync' ? (
            <SyncView />
          ) : browsable ? (
            <FileBrowser key={account.id} account={account} />
          ) : mailbox ? (
            <Mailbox key={account.id} account={account} />
          ) : account && !account.active ? (
            <AccountProblem key={account.id} account={account} />
          ) : (
            <div className="placeholder">
              {accounts.isLoading ? (
                <span>Loading…</span>
              ) : account && connectors.data ? (
                <span>“<Name value={account.account} />” is a {account.serviceName} account; it has no files to browse here.</span>
              ) : (
                <span>Choose an account on the left, or connect one.</span>
              )}
            </div>
          )}
        </main>
      </div>
      <TransfersPanel />
      <TransferNotices />
      <ConflictDialog />
      <Toasts />
    </div>
  );
}
