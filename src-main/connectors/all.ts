/** Every backend Tributary ships, one line each. Adding a connector touches only this file. */
import { register } from './registry';
import memory from './memory';

register(memory);
