/**
 * A context menu (right click, Shift+F10, the Menu key) as a WAI-ARIA menu: focus moves into it,
 * ↑/↓/Home/End move between the enabled items, Enter or Space runs one, Escape or a click
 * elsewhere closes it and focus goes back where it was.
 */
import { useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import './context-menu.css';

export interface MenuItem {
  id: string;
  label: ReactNode;
  /** Shown at the right, as a hint (e.g. "Ctrl+C"). */
  shortcut?: string;
  disabled?: boolean;
  danger?: boolean;
  /** A line above this item. */
  separator?: boolean;
  run(): void;
}

export function ContextMenu(props: { x: number; y: number; items: MenuItem[]; label: string; onClose(): void }) {
  const ref = useRef<HTMLDivElement>(null);
  const [pos, setPos] = useState({ left: props.x, top: props.y });
  const returnTo = useRef<Element | null>(typeof document === 'undefined' ? null : document.activeElement);
  const enabled = () => Array.from(ref.current?.querySelectorAll<HTMLElement>('[role=menuitem]:not([aria-disabled=true])') ?? []);

  // Kept inside the window, whatever corner it opened in.
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const r = el.getBoundingClientRect();
    setPos({ left: Math.max(4, Math.min(props.x, window.innerWidth - r.width - 4)), top: Math.max(4, Math.min(props.y, window.innerHeight - r.height - 4)) });
    enabled()[0]?.focus();
  }, [props.x, props.y]);

  useEffect(() => {
    const away = (e: MouseEvent) => {
      if (!ref.current?.contains(e.target as Node)) props.onClose();
    };
    const blur = () => props.onClose();
    window.addEventListener('mousedown', away, true);
    window.addEventListener('blur', blur);
    window.addEventListener('resize', blur);
    return () => {
      window.removeEventListener('mousedown', away, true);
      window.removeEventListener('blur', blur);
      window.removeEventListener('resize', blur);
    };
  }, [props.onClose]);

  const close = () => {
    props.onClose();
    (returnTo.current as HTMLElement | null)?.focus?.({ preventScroll: true });
  };

  const onKeyDown = (e: KeyboardEvent) => {
    const items = enabled();
    const at = items.indexOf(document.activeElement as HTMLElement);
    const go = (i: number) => {
      e.preventDefault();
      items[(i + items.length) % items.length]?.focus();
    };
    switch (e.key) {
      case 'ArrowDown':
        return go(at + 1);
      case 'ArrowUp':
        return go(at - 1);
      case 'Home':
        return go(0);
      case 'End':
        return go(items.length - 1);
      case 'Escape':
      case 'Tab':
        e.preventDefault();
        e.stopPropagation();
        return close();
    }
  };

  return (
    <div ref={ref} className="context-menu popup-panel" role="menu" aria-label={props.label} style={pos} onKeyDown={onKeyDown} onContextMenu={(e) => e.preventDefault()} data-testid="context-menu">
      {props.items.map((item) => (
        <div key={item.id} role="none">
          {item.separator && <div className="menu-separator" role="separator" />}
          <button
            type="button"
            role="menuitem"
            tabIndex={-1}
            className={`menu-item${item.danger ? ' danger' : ''}`}
            aria-disabled={item.disabled || undefined}
            data-testid={`menu-${item.id}`}
            onClick={() => {
              if (item.disabled) return;
              close();
              item.run();
            }}
          >
            <span>{item.label}</span>
            {item.shortcut && <kbd className="menu-shortcut">{item.shortcut}</kbd>}
          </button>
        </div>
      ))}
    </div>
  );
}
