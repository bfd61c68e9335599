import type { Account } from '../../../src-main/contract';
import { nameText } from './Name';

/** The `<option>`s of an account `<select>`: value the account id, label its name. */
export function AccountOptions(props: { accounts: Account[] }) {
  return (
    <>
      {props.accounts.map((a) => (
        <option key={a.id} value={a.id}>
          {nameText(a.account)}
        </option>
      ))}
    </>
  );
}
