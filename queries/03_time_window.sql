-- One topic in a one-second window: the chunk index prunes everything else.
SELECT count(*) AS imu_messages, sum(length(data)) AS payload_bytes
FROM 'tests/data/demo.mcap'
WHERE topic = '/imu'
  AND log_time >= to_timestamp(1700000002) AND log_time < to_timestamp(1700000003);
