/**
 * Registers every backend Tributary ships: each folder beside this file whose index.ts
 * default-exports a ConnectorDefinition. Adding a connector is adding its folder; nothing else
 * in Tributary names a concrete backend.
 */
import { register } from './registry';
import type { ConnectorDefinition } from './types';

const modules = import.meta.glob<{ default: ConnectorDefinition }>('./*/index.ts', { eager: true });
register(...Object.values(modules).map((m) => m.default));
