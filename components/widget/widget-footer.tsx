/** Who answers: an AI assistant, and whether it runs on the offline model. */
export function WidgetFooter({ offline }: { offline: boolean }) {
  return (
    <footer className="shrink-0 bg-white px-3 pb-2 text-center text-[11px] text-slate-500" data-testid="widget-footer">
      AI assistant · a person can join any time
      {offline ? (
        <span className="ml-1.5 whitespace-nowrap rounded bg-slate-100 px-1.5 py-0.5 font-medium text-slate-600">offline model</span>
      ) : null}
    </footer>
  );
}
