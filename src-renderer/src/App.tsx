/** The window: header, accounts sidebar, file browser, transfers panel, dialogs and toasts. */
import { useEffect, useState } from 'react';
import { useAccounts, useConnectors, useServerEvents } from './api/hooks';
import { ActivityIcon, LogoIcon, SettingsIcon } from './components/Icons';
import { Toasts } from './components/Toasts';
import { Sidebar } from './features/accounts/Sidebar';
import { ConflictDialog } from './features/files/ConflictDialog';
import { ActivityDashboard } from './features/activity/Dashboard';
import { SettingsDialog } from './features/settings/SettingsDialog';
import { SyncView } from './features/sync/SyncView';
import { FileBrowser } from './features/files/FileBrowser';
import { Mailbox } from './features/mailbox/Mailbox';
import { TransferNotices } from './features/transfers/notices';
import { TransfersButton, TransfersPanel } from './features/transfers/TransfersPanel';
import { useUi } from './stores/ui';

export function App() {
  useServerEvents();
  const accounts = useAccounts();
  const current = useUi((s) => s.account);
  const connectors = useConnectors();
  const account = accounts.data?.find((a) => a.id === current) ?? null;
  const kindOf = (service: string) => connectors.data?.find((c) => c.id === service)?.kind;
  const view = useUi((s) => s.view);
  const [settingsOpen, setSettingsOpen] = useState(false);
  const browsable = account && account.active && kindOf(account.service) === 'storage';
  const mailbox = account && account.active && kindOf(account.service) === 'mail';

  // Start on the default account (the first-run local folder), else the first usable one.
  useEffect(() => {
    if (!accounts.data || current !== null) return;
    if (!connectors.data) return;
    const usable = accounts.data.filter((a) => a.active && kindOf(a.service) === 'storage');
    const first = usable.find((a) => a.isDefault) ?? usable[0];
    if (first) useUi.getState().open(first.id);
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
        <div className="brand">
          <LogoIcon />
          <span>Tributary</span>
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
        <Sidebar />
        <main className="content">
          {view === 'activity' ? (
            <ActivityDashboard />
          ) : view === 'sync' ? (
            <SyncView />
          ) : browsable ? (
            <FileBrowser key={account.id} account={account} />
          ) : mailbox ? (
            <Mailbox key={account.id} account={account} />
          ) : (
            <div className="placeholder">
              {accounts.isLoading ? (
                <span>Loading…</span>
              ) : account && !account.active ? (
                <span>“{account.account}” is disabled. Enable it from its menu in the sidebar.</span>
              ) : account && connectors.data ? (
                <span>“{account.account}” is a {account.serviceName} account; it has no files to browse here.</span>
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
