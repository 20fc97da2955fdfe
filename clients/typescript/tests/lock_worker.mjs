// A worker process of lock.test.mjs: takes the lock ROUNDS times and, while
// holding it, appends "enter <fence>" and "exit <fence>" lines to the shared
// log (O_APPEND), with a pause in between so an overlap would show.
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

import { Sidecar } from "../dist/index.js";

const [url, name, log, rounds, who] = process.argv.slice(2);
const sc = new Sidecar(url);
for (let i = 0; i < Number(rounds); i++) {
  await sc.withLock(name, { ttl: 5, wait: 30, owner: who }, async (lock) => {
    appendFileSync(log, `enter ${lock.fencingToken} ${who}\n`);
    await sleep(20);
    appendFileSync(log, `exit ${lock.fencingToken} ${who}\n`);
  });
}
