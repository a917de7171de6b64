import net from "node:net";

// A TCP proxy in front of a database that can go silent without closing: the connections stay open and nothing
// passes either way — as when the database's host vanishes, a NAT or a load balancer forgets a connection, a network
// partition, or a server that no longer answers.

export interface SilentProxy {
  /** the database's URL through the proxy */
  url: string;
  /** The connections open now go silent; new ones pass. */
  silence(): void;
  /** Every connection, open now or opened later, goes silent (a new one is accepted, and never answered). */
  freeze(): void;
  /** The silent connections are closed, as a server or a firewall that finally drops them would; new ones pass. */
  cutSilent(): void;
  /**
   * The client side of every open connection is closed and the database is never told: its side stays open and
   * silent, as when the client's host vanishes (a VM gone, a partition). New connections pass.
   */
  vanishClients(): void;
  /** connections made through the proxy so far */
  connections(): number;
  close(): Promise<void>;
}

export async function silentProxy(target: URL): Promise<SilentProxy> {
  type Pair = { client: net.Socket; server: net.Socket; silent: boolean; serverKept?: boolean };
  const open: Pair[] = [];
  let count = 0;
  let frozen = false;
  const server = net.createServer((client) => {
    count++;
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const pair: Pair = { client, server: upstream, silent: frozen };
    open.push(pair);
    client.on("data", (d) => pair.silent || upstream.write(d));
    upstream.on("data", (d) => pair.silent || client.write(d));
    const end = () => {
      client.destroy();
      if (!pair.serverKept) upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    silence: () => {
      for (const pair of open) pair.silent = true;
    },
    freeze: () => {
      frozen = true;
      for (const pair of open) pair.silent = true;
    },
    cutSilent: () => {
      frozen = false;
      for (const pair of open.filter((p) => p.silent)) {
        pair.client.destroy();
        pair.server.destroy();
      }
    },
    vanishClients: () => {
      for (const pair of open) {
        pair.silent = true;
        pair.serverKept = true;
        pair.client.destroy();
      }
    },
    connections: () => count,
    close: async () => {
      for (const pair of open) {
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
