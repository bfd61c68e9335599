/** The virtualized list of conversations, newest first; the next page is fetched as its end comes into view. */
import { useEffect } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { formatDate } from '../../components/format';
import { FlagIcon, PaperclipIcon } from '../../components/Icons';
import { shortPerson, type Thread } from './mailQueries';
import { listPlaceholder } from '../../components/ListPlaceholder';
import './mailbox.css';

const ROW_HEIGHT = 64;

export function ThreadList(props: {
  threads: Thread[];
  loading: boolean;
  error: string | null;
  title: string;
  selectedThread: string | null;
  hasMore: boolean;
  fetchingMore: boolean;
  fetchMore(): void;
  onSelect(t: Thread): void;
  listRef: React.RefObject<HTMLDivElement | null>;
  own: string;
  /** Sent and Drafts show whom a message is to, as mail clients do. */
  recipientsFirst: boolean;
  /** The unified inbox names each row's account. */
  accountNames?: Map<number, string> | null;
}) {
  const { threads } = props;
  const virtualizer = useVirtualizer({ count: threads.length, getScrollElement: () => props.listRef.current, estimateSize: () => ROW_HEIGHT, overscan: 10 });
  const items = virtualizer.getVirtualItems();
  const lastIndex = items.length ? items[items.length - 1].index : -1;
  // Progressive paging: the next page is asked for when the last rows come into view.
  useEffect(() => {
    if (props.hasMore && !props.fetchingMore && lastIndex >= threads.length - 20) props.fetchMore();
  }, [lastIndex, threads.length, props.hasMore, props.fetchingMore]);
  const selIndex = threads.findIndex((t) => t.id === props.selectedThread);
  useEffect(() => {
    if (selIndex >= 0) virtualizer.scrollToIndex(selIndex, { align: 'auto' });
  }, [selIndex, virtualizer]);

  return (
    <div id="mail-list-pane" className="mail-list-wrap" data-testid="mail-list-pane">
      <div className="mail-list-title">{props.title}</div>
      <div ref={props.listRef} className="mail-list" role="listbox" aria-label="Messages" tabIndex={0} data-testid="mail-list" aria-busy={props.loading}>
        {listPlaceholder({ loading: props.loading, error: props.error, empty: threads.length === 0, emptyTestId: 'mail-empty', whenEmpty: 'No messages' }) ?? (
          <div className="list-inner" style={{ height: virtualizer.getTotalSize() }}>
            {items.map((v) => {
              const t = threads[v.index];
              const m = t.latest;
              const fromMe = m.from?.email.toLowerCase() === props.own;
              const who = props.recipientsFirst && fromMe && m.to.length ? `To: ${shortPerson(m.to[0])}` : shortPerson(m.from);
              const selected = t.id === props.selectedThread;
              return (
                <div
                  key={t.id}
                  role="option"
                  aria-selected={selected}
                  className={`mail-row${selected ? ' selected' : ''}${t.unread ? ' unread' : ''}`}
                  style={{ transform: `translateY(${v.start}px)` }}
                  onClick={() => props.onSelect(t)}
                  data-testid="mail-row"
                  data-subject={m.subject}
                  data-unread={t.unread}
                  data-flagged={t.flagged}
                  data-account={m.account}
                >
                  <div className="mail-row-line">
                    <span className="mail-row-from">
                      {who}
                      {t.messages.length > 1 && <span className="mail-count">{t.messages.length}</span>}
                    </span>
                    {props.accountNames && (
                      <span className="mail-row-account" data-testid="mail-row-account">
                        {props.accountNames.get(m.account) ?? ''}
                      </span>
                    )}
                    <span className="mail-row-date" title={formatDate(m.created)}>
                      {shortDate(m.created)}
                    </span>
                  </div>
                  <div className="mail-row-line">
                    <span className="mail-row-subject">{m.subject || '(no subject)'}</span>
                    <span className="mail-row-icons">
                      {t.hasAttachments && (
                        <span className="mail-clip" title="Has attachments" aria-label="Has attachments" data-testid="mail-attachment-icon">
                          <PaperclipIcon />
                        </span>
                      )}
                      {t.flagged && (
                        <span className="mail-flag" title="Flagged" aria-label="Flagged">
                          <FlagIcon filled />
                        </span>
                      )}
                    </span>
                  </div>
                  {m.snippet && <div className="mail-row-snippet">{m.snippet}</div>}
                </div>
              );
            })}
          </div>
        )}
      </div>
      <div className="list-footer">
        {threads.length} conversation{threads.length === 1 ? '' : 's'}
        {props.fetchingMore ? ' · loading more…' : props.hasMore ? ' · more on scroll' : ''}
      </div>
    </div>
  );
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

function shortDate(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return timeFmt.format(d);
  if (d.getFullYear() === now.getFullYear()) return dayFmt.format(d);
  return formatDate(iso).split(',')[0];
}
