/**
 * The accounts sidebar: one entry per account (service icon, name, quota when the backend has
 * one), the active one highlighted; rename, reconnect, disable/enable (Retry for an account
 * Tributary deactivated) and delete from its menu. Entries
 * are drop targets: files dragged here move (or with Alt/Ctrl copy) to that account's root.
 */
import { useEffect, useRef, useState } from 'react';
import type { Account } from '../../../../src-main/contract';
import { useAccounts, useApi, useConnectors, useQuota } from '../../api/hooks';
import { ConfirmDialog, PromptDialog } from '../../components/Dialog';
import { formatBytes } from '../../components/format';
import { MoreIcon, PlusIcon, ServiceIcon } from '../../components/Icons';
import { Name, named, nameText } from '../../components/Name';
import { toastError, useUi } from '../../stores/ui';
import { dropItems, hasItems, isCopyGesture, readItems } from '../files/dnd';
import { needsReconnect, ReconnectDialog } from './AccountProblem';
import { useInboxUnread } from '../mailbox/unread';
import { ConnectDialog } from './ConnectDialog';
import './accounts.css';

export function Sidebar() {
  const accounts = useAccounts();
  const connectors = useConnectors();
  const current = useUi((s) => (s.view === 'account' ? s.account : null));
  const [connecting, setConnecting] = useState(false);
  const groupOf = (service: string) => connectors.data?.find((c) => c.id === service)?.group;
  const unread = useInboxUnread().byAccount;

  return (
    <aside className="sidebar" aria-label="Accounts">
      <div className="sidebar-title">Accounts</div>
      {accounts.isLoading && <div className="sidebar-note">Loading…</div>}
      {accounts.error && (
        <div className="sidebar-note error" role="alert">
          {accounts.error.message}
        </div>
      )}
      <ul className="account-list" data-testid="account-list">
        {accounts.data?.map((a) => (
          <AccountItem key={a.id} account={a} group={groupOf(a.service)} active={a.id === current} unread={unread.get(a.id) ?? 0} />
        ))}
      </ul>
      <button type="button" className="btn btn-ghost connect-btn" onClick={() => setConnecting(true)} data-testid="connect-account">
        <PlusIcon /> Connect account
      </button>
      {connecting && <ConnectDialog onClose={() => setConnecting(false)} />}
    </aside>
  );
}

function AccountItem({ account, group, active, unread }: { account: Account; group?: string; active: boolean; unread: number }) {
  const api = useApi();
  const open = useUi((s) => s.open);
  const quota = useQuota(account);
  const [menu, setMenu] = useState(false);
  const [dialog, setDialog] = useState<'rename' | 'delete' | 'reconnect' | null>(null);
  const broken = needsReconnect(account);
  const [dropOver, setDropOver] = useState(false);
  const menuRef = useRef<HTMLDivElement>(null);
  const menuButton = useRef<HTMLButtonElement>(null);
  /** Closes the menu with the focus back on its ⋯ button (where a dialog it opens returns it too). */
  const closeMenu = () => {
    menuButton.current?.focus();
    setMenu(false);
  };

  useEffect(() => {
    if (!menu) return;
    const close = (e: Event) => {
      if (!menuRef.current?.contains(e.target as Node)) setMenu(false);
    };
    document.addEventListener('mousedown', close);
    menuRef.current?.querySelector<HTMLButtonElement>('[role=menuitem]')?.focus();
    return () => document.removeEventListener('mousedown', close);
  }, [menu]);

  const update = async (changes: { account?: string; active?: boolean }) => {
    try {
      await api.call('accounts.update', { id: account.id, ...changes });
    } catch (e) {
      toastError('Could not update the account', e);
    }
  };

  const retry = async () => {
    try {
      await api.call('accounts.reconnect', { id: account.id });
    } catch (e) {
      toastError(named`Could not reconnect “${account.account}”`, e);
    }
  };

  const remove = async () => {
    try {
      await api.call('accounts.delete', { id: account.id });
      if (useUi.getState().account === account.id) useUi.setState({ account: null, folder: 'root' });
    } catch (e) {
      toastError('Could not remove the account', e);
    }
  };

  const q = quota.data;
  const pct = q && q.total && q.used !== null ? Math.min(100, (q.used / q.total) * 100) : null;

  return (
    <li
      className={`account${active ? ' active' : ''}${account.active ? '' : ' disabled'}${dropOver ? ' drop-active' : ''}`}
      data-testid="account-item"
      data-name={account.account}
      data-service={account.service}
      onDragOver={(e) => {
        if (!hasItems(e.dataTransfer) || !account.active) return;
        e.preventDefault();
        e.dataTransfer.dropEffect = isCopyGesture(e) ? 'copy' : 'move';
        setDropOver(true);
      }}
      onDragLeave={() => setDropOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setDropOver(false);
        const dragged = readItems(e.dataTransfer);
        if (dragged) void dropItems(api, dragged, { account: account.id, folder: 'root' }, isCopyGesture(e));
      }}
    >
      <button
        type="button"
        className="account-main"
        aria-current={active ? 'true' : undefined}
        onClick={() => open(account.id)}
        title={account.active ? `${nameText(account.account)} — ${account.serviceName}` : broken ? `${nameText(account.account)} needs reconnecting` : `${nameText(account.account)} is disabled`}
      >
        <span className="account-icon">
          <ServiceIcon group={group} service={account.service} />
        </span>
        <span className="account-text">
          <span className="account-name">
            <Name value={account.account} />
            {unread > 0 && (
              <span className="mail-unread account-unread" data-testid="account-unread" aria-label={`${unread} unread in the inbox`}>
                {unread}
              </span>
            )}
          </span>
          <span className="account-service">
            {serviceLine(account)}
            {broken ? ' · needs reconnecting' : !account.active && ' · disabled'}
          </span>
          {pct !== null && (
            <span className="quota" title={`${formatBytes(q!.used)} of ${formatBytes(q!.total)} used`}>
              <span className="quota-bar" role="progressbar" aria-label="Storage used" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)}>
                <span className={`quota-fill${pct > 90 ? ' high' : ''}`} style={{ width: `${pct}%` }} />
              </span>
              <span className="quota-text">
                {formatBytes(q!.used)} of {formatBytes(q!.total)}
              </span>
            </span>
          )}
          {pct === null && q && q.used !== null && <span className="quota-text">{formatBytes(q.used)} used</span>}
        </span>
      </button>
      <div className="account-menu-wrap" ref={menuRef}>
        <button ref={menuButton} type="button" className="icon-btn account-menu-btn" aria-label={`Options for ${nameText(account.account)}`} aria-haspopup="menu" aria-expanded={menu} onClick={() => setMenu(!menu)} data-testid="account-menu">
          <MoreIcon />
        </button>
        {menu && (
          <div
            className="menu popup-panel"
            role="menu"
            onKeyDown={(e) => {
              if (e.key === 'Escape') {
                e.preventDefault();
                e.stopPropagation();
                closeMenu();
              }
              // Tab leaves the menu, closing it, and goes on from its button to the next control.
              if (e.key === 'Tab') closeMenu();
              if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
                e.preventDefault();
                const items = [...(menuRef.current?.querySelectorAll<HTMLButtonElement>('[role=menuitem]') ?? [])];
                const i = items.indexOf(document.activeElement as HTMLButtonElement);
                items[(i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length]?.focus();
              }
            }}
          >
            <button type="button" role="menuitem" onClick={() => {
                closeMenu();
                setDialog('rename');
              }} data-testid="account-rename">
              Rename…
            </button>
            <button type="button" role="menuitem" onClick={() => {
                closeMenu();
                setDialog('reconnect');
              }} data-testid="account-menu-reconnect">
              Reconnect…
            </button>
            {broken ? (
              <button type="button" role="menuitem" onClick={() => {
                  closeMenu();
                  void retry();
                }} data-testid="account-menu-retry">
                Retry
              </button>
            ) : (
              <button type="button" role="menuitem" onClick={() => {
                  closeMenu();
                  void update({ active: !account.active });
                }} data-testid="account-toggle">
                {account.active ? 'Disable' : 'Enable'}
              </button>
            )}
            <button type="button" role="menuitem" className="danger" onClick={() => {
                closeMenu();
                setDialog('delete');
              }} data-testid="account-delete">
              Remove…
            </button>
          </div>
        )}
      </div>
      {dialog === 'rename' && <PromptDialog title="Rename account" label="Display name" initial={account.account} confirm="Rename" onSubmit={(name) => void update({ account: name })} onClose={() => setDialog(null)} />}
      {dialog === 'reconnect' && <ReconnectDialog account={account} onClose={() => setDialog(null)} />}
      {dialog === 'delete' && (
        <ConfirmDialog
          title={named`Remove "${account.account}"?`}
          message={<p>Tributary forgets this account and its saved credentials. Files on the {account.serviceName} server are not touched.</p>}
          confirm="Remove account"
          danger
          onConfirm={() => void remove()}
          onClose={() => setDialog(null)}
        />
      )}
    </li>
  );
}

/** Under the name: the service, or where it points when the name already says the service. */
function serviceLine(a: Account): string {
  if (a.account !== a.serviceName) return a.serviceName;
  const where = a.settings.path ?? a.settings.url ?? a.settings.host;
  return typeof where === 'string' ? where : a.serviceName;
}
