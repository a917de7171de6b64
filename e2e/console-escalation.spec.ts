import { agentCli, captureActions, ConversationPage, expect, replayAction, seedEscalation, signedInAs, test } from "./fixtures/console";

// A customer asks for a person: the escalation is in the queue, a reviewer takes the conversation over,
// answers under their own name (the agent stays quiet), and hands it back.

interface CustomerView {
  messages: Array<{ from: string; name: string | null; text: string }>;
}

test("escalation → take over → reply → hand back", async ({ page, as, queue, browser, baseURL }) => {
  const { handoffId, conversationId } = await seedEscalation();
  await as("raj");
  await queue.goto("?kind=escalation");
  const item = queue.item(handoffId);
  await expect(item).toContainText("Escalation: The customer asked for a person.");
  await item.click();

  // The escalation's page is the self-contained record, and it links to the conversation.
  await expect(page.getByTestId("record-asked")).toContainText("I want to talk to a person please");
  await expect(page.getByTestId("record-recommended")).toHaveText("Take over the conversation and reply to the customer.");
  await page.getByRole("link", { name: "Open the conversation" }).last().click();
  await expect(page).toHaveURL(new RegExp(`/console/conversations/${conversationId}$`));

  const conversation = new ConversationPage(page);
  await expect(conversation.log).toContainText("I want to talk to a person please");
  await expect(conversation.log).toContainText("I've asked a person from our team to take over");
  await expect(conversation.status).toHaveText("Waiting for a person");
  await expect(conversation.reply).toHaveCount(0); // no reply box before taking over

  const raj = captureActions(page);
  await conversation.takeOver.click();
  await expect(conversation.result).toHaveText("You took over this conversation. The agent will not reply while you hold it.");
  await expect(conversation.status).toHaveText("With you");
  await expect(conversation.log).toContainText("Raj from our team has joined the conversation.");
  await expect(conversation.reply).toBeFocused();

  await conversation.reply.fill("Hi Sam, this is Raj. I'm looking at your order now.");
  await conversation.send.click();
  await expect(conversation.result).toHaveText("Reply sent.");
  await expect(conversation.reply).toHaveValue("");
  const mine = conversation.log.locator('[data-from="person"]').last();
  await expect(mine).toContainText("Raj (support team)");
  await expect(mine).toContainText("Hi Sam, this is Raj.");

  // The customer (through the product's own view, via the CLI) sees the reply under Raj's name, and the
  // customer's next message reaches a person, not the agent.
  const said = agentCli<{ replies: Array<{ author: string; text: string }>; conversationStatus: string }>(
    "say",
    "--tenant",
    "acme",
    "--conversation",
    conversationId,
    "Thanks Raj, it's order A-2003",
  );
  expect(said.conversationStatus).toBe("human");
  expect(said.replies.filter((r) => r.author === "AGENT")).toHaveLength(0);
  await expect(conversation.log.locator('[data-from="customer"]').last()).toContainText("Thanks Raj, it's order A-2003"); // live

  // The escalation was resolved by the take-over: it left the open queue.
  const api = await page.request.get(`/api/console/conversations/${conversationId}`);
  const detail = (await api.json()).data as { view: CustomerView; handoffs: Array<{ id: string; status: string }> };
  expect(detail.handoffs.find((h) => h.id === handoffId)?.status).toBe("RESOLVED");
  expect(detail.view.messages.some((m) => m.from === "person" && m.name === "Raj")).toBe(true);

  // Rita, who does not own it, gets no reply box — and the server refuses her reply and her hand-back.
  const rita = await signedInAs(browser, "rita", baseURL!);
  const ritaView = new ConversationPage(rita.page);
  await ritaView.goto(conversationId);
  await expect(ritaView.status).toHaveText("With Raj");
  await expect(rita.page.getByText("Raj has taken over this conversation.")).toBeVisible();
  await expect(ritaView.reply).toHaveCount(0);
  await expect(ritaView.takeOver).toHaveCount(0);
  const replyAction = raj.find((a) => a.body.includes("Hi Sam"))!;
  const refused = await replayAction(rita.page.request, {
    ...replyAction,
    body: replyAction.body.replace("Hi Sam, this is Raj.", "Rita sneaking in."),
  });
  expect(refused.text).toContain('"code":"FORBIDDEN"');
  expect(refused.text).toContain("Take the conversation over before replying.");
  await expect(conversation.log).not.toContainText("Rita sneaking in.");
  await rita.close();

  await conversation.handBack.click();
  await expect(conversation.result).toHaveText("Handed back to the agent.");
  await expect(conversation.log).toContainText("Raj handed the conversation back to our virtual assistant.");
  await expect(conversation.status).not.toHaveText(/With/);
  await expect(conversation.takeOver).toBeVisible();
});
