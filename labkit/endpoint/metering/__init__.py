"""What a request used, as DynamoDB reports it: ``consumed_capacity`` (ConsumedCapacity: read and
write units per table and index, and per partition for hooks) and ``item_collections``
(ItemCollectionMetrics: the size of the item collection a write touched). Pure functions of plain data.
"""
