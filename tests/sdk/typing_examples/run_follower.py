"""A run's streams followed in one subscription: checked with `mypy --strict` by
test_typing_examples."""
from runnel_client import AsyncRunnelClient, LiveEvent, Record, RunFollowState


async def show_run(url: str, token: str, run_id: str) -> list[str]:
    lines: list[str] = []
    state = RunFollowState({"answer": 3})
    async with AsyncRunnelClient(url, token) as rn:
        async for item in rn.follow_run(run_id, state=state, live=True, streams=["answer"]):
            if isinstance(item, LiveEvent):
                lines.append(f"{item.stream_id} live {item.chunk}")
            else:
                lines.append(f"{item.stream_id} {item.sequence}: {item.payload}")
        async for record in rn.follow_run(run_id, {"answer": 3}):
            assert isinstance(record, Record)  # live=False: nothing else comes
    return [*lines, state.cursor_text()]
