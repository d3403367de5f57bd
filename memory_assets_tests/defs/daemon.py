"""What the Dagster daemon does with a sensor tick's result besides launching its runs: its
dynamic-partition requests applied and its asset events reported, on the given instance."""

import dagster as dg


def apply_tick(instance: dg.DagsterInstance, result: dg.SensorResult) -> None:
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, dg.DeleteDynamicPartitionsRequest):
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
        else:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    for event in result.asset_events or []:
        instance.report_runless_asset_event(event)
